//! Summaries of the victim scan's keys a block of pool slots at a time, so
//! that the scan passes over a block none of whose members can be chosen
//! after reading one summary instead of every slot.
//!
//! A block's summary holds how many of its slots are candidates (members,
//! not retained: exact, for the reference's evaluation count) and, over
//! those candidates, a lower bound of their ratios `r` and of their last
//! accesses `a` (so an upper bound of their staleness). The bounds are only
//! ever lowered when a key is renewed, a removal leaves them as they are,
//! and the scan makes them exact again for every block it reads in full:
//! they stay bounds, tight where the scan looks.
//!
//! It also names one slot of the block, its representative: the candidate
//! the scan last found there with the least known score, a hint for the
//! next scan's starting bound that the scan checks before it trusts it.

use super::victim::Key;
use crate::pool::HOLE;

/// Slots a block. Inception-v4 at 0.20 of its peak (a thrashing replay,
/// about 700 slots a scan): with blocks of 8 the scan reads a third of the
/// slots; 16 were no faster.
pub(super) const BLOCK: usize = 8;

#[derive(Clone, Copy, Debug)]
pub(super) struct Block {
    /// At most every candidate's ratio `r` (+inf when none).
    pub(super) r_min: f64,
    /// At most every candidate's last access `a` (+inf when none).
    pub(super) a_min: f64,
    /// Candidates in the block.
    pub(super) live: u32,
    /// The representative's place in the block (`NO_REP`: none), set by
    /// `tighten`.
    rep: u8,
}

const NO_REP: u8 = u8::MAX;

const EMPTY: Block = Block { r_min: f64::INFINITY, a_min: f64::INFINITY, live: 0, rep: NO_REP };

/// The exact summary of one block's slots and keys.
fn summary(slots: &[u32], keys: &[Key]) -> Block {
    let mut b = EMPTY;
    for (&slot, key) in slots.iter().zip(keys) {
        if slot != HOLE && !key.retained {
            b.live += 1;
            b.r_min = b.r_min.min(key.r);
            b.a_min = b.a_min.min(key.a);
        }
    }
    b
}

/// The summaries of the pool's blocks of slots, for the pool's slots as they
/// were at compaction `at` (rebuilt when the pool has compacted since).
#[derive(Clone, Debug, Default)]
pub(super) struct KeyBlocks {
    blocks: Vec<Block>,
    at: u64,
}

impl KeyBlocks {
    /// Whether the summaries follow the pool's slots (no compaction since
    /// they were built).
    #[inline]
    pub(super) fn follows(&self, compactions: u64) -> bool {
        self.at == compactions
    }

    /// Summarize the slots anew (after a compaction moved them), from keys
    /// renewed since every member entered.
    pub(super) fn rebuild(&mut self, slots: &[u32], keys: &[Key], compactions: u64) {
        self.blocks.clear();
        self.blocks.extend(slots.chunks(BLOCK).zip(keys.chunks(BLOCK)).map(|(s, k)| summary(s, k)));
        self.at = compactions;
    }

    /// A member now occupies `slot`, the pool's last, counted if it is a
    /// candidate (its key comes with `renewed`).
    #[inline]
    pub(super) fn entered(&mut self, slot: usize, candidate: bool) {
        let b = slot / BLOCK;
        if b == self.blocks.len() {
            self.blocks.push(EMPTY);
        }
        self.blocks[b].live += candidate as u32;
    }

    /// The candidate at `slot` left the pool; its bounds may stay.
    #[inline]
    pub(super) fn left(&mut self, slot: usize) {
        let b = &mut self.blocks[slot / BLOCK];
        // Never below zero while the counts follow the pool: loudly if not.
        b.live = b.live.checked_sub(1).expect("a block of the victim scan counts fewer candidates than left it");
    }

    /// The candidate at `slot` has key `key` now.
    #[inline]
    pub(super) fn renewed(&mut self, slot: usize, key: &Key) {
        let b = &mut self.blocks[slot / BLOCK];
        b.r_min = b.r_min.min(key.r);
        b.a_min = b.a_min.min(key.a);
    }

    #[inline]
    pub(super) fn get(&self, b: usize) -> Block {
        self.blocks[b]
    }

    /// The exact bounds of block `b`, found by a scan that read all of it,
    /// and the slot of its representative.
    #[inline]
    pub(super) fn tighten(&mut self, b: usize, r_min: f64, a_min: f64, rep: Option<usize>) {
        let block = &mut self.blocks[b];
        block.r_min = r_min;
        block.a_min = a_min;
        block.rep = rep.map_or(NO_REP, |i| {
            debug_assert_eq!(i / BLOCK, b);
            (i % BLOCK) as u8
        });
    }

    /// The slots of the representatives of the blocks that hold
    /// candidates: whatever holds such a slot now (a member, a hole) is for
    /// the caller to check.
    #[inline]
    pub(super) fn reps(&self) -> impl Iterator<Item = usize> + '_ {
        self.blocks.iter().enumerate().filter(|(_, b)| b.live > 0 && b.rep != NO_REP).map(|(i, b)| i * BLOCK + b.rep as usize)
    }

    pub(super) fn len(&self) -> usize {
        self.blocks.len()
    }

    /// The self-check: each block's count is exact and its bounds hold.
    pub(super) fn check(&self, slots: &[u32], keys: &[Key]) -> Result<(), String> {
        if self.blocks.len() != slots.len().div_ceil(BLOCK) {
            return Err(format!("{} block summaries for {} slots", self.blocks.len(), slots.len()));
        }
        for (i, ((s, k), b)) in slots.chunks(BLOCK).zip(keys.chunks(BLOCK)).zip(&self.blocks).enumerate() {
            let exact = summary(s, k);
            if exact.live != b.live || exact.r_min < b.r_min || exact.a_min < b.a_min {
                return Err(format!("block {i} of the victim scan's keys is summarized wrongly: {b:?}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::Pool;
    use crate::rng::SplitMix64;

    fn key(rng: &mut SplitMix64, retained: bool) -> Key {
        let r = match rng.below(8) {
            0 => 0.0,
            1 => f64::INFINITY,
            _ => rng.below(1000) as f64 / 7.0,
        };
        let a = if rng.below(8) == 0 { f64::NEG_INFINITY } else { rng.below(1000) as f64 };
        Key { r, a, retained, ..Key::default() }
    }

    /// The replay's protocol (`pool_push`, `pool_remove`, `refresh_keys`,
    /// the scan's rebuild and `tighten`) against the summaries' self-check,
    /// through many compactions; one storage in ten is retained.
    #[test]
    fn summaries_follow_the_pool() {
        let n = 200u32;
        let mut rng = SplitMix64::new(7);
        let mut pool: Pool<Key> = Pool::new(n as usize);
        let mut blocks = KeyBlocks::default();
        let retained = |s: u32| s.is_multiple_of(10);
        for step in 0..20_000u32 {
            let s = rng.below(n as u64) as u32;
            let follows = blocks.follows(pool.compactions());
            match rng.below(3) {
                0 => {
                    if pool.push_back(s) {
                        *pool.payload_mut(s) = key(&mut rng, retained(s));
                        if follows {
                            blocks.entered(pool.slot_of(s), !retained(s));
                            if !retained(s) {
                                blocks.renewed(pool.slot_of(s), &pool.payload()[pool.slot_of(s)]);
                            }
                        }
                    }
                }
                1 => {
                    if pool.contains(s) {
                        if follows && !retained(s) {
                            blocks.left(pool.slot_of(s));
                        }
                        pool.remove(s);
                    }
                }
                _ => {
                    if pool.contains(s) {
                        let k = key(&mut rng, retained(s));
                        *pool.payload_mut(s) = k;
                        if follows && !retained(s) {
                            blocks.renewed(pool.slot_of(s), &k);
                        }
                    }
                }
            }
            if step.is_multiple_of(50) {
                // A scan: rebuilt if the slots moved, then read in full.
                if !blocks.follows(pool.compactions()) {
                    blocks.rebuild(pool.slots(), pool.payload(), pool.compactions());
                }
                blocks.check(pool.slots(), pool.payload()).unwrap();
                for b in 0..blocks.len() {
                    let lo = b * BLOCK;
                    let hi = (lo + BLOCK).min(pool.slots().len());
                    let exact = summary(&pool.slots()[lo..hi], &pool.payload()[lo..hi]);
                    blocks.tighten(b, exact.r_min, exact.a_min, None);
                }
                blocks.check(pool.slots(), pool.payload()).unwrap();
            }
        }
        assert!(pool.compactions() > 10, "the test compacts: {}", pool.compactions());
    }

    /// The self-check catches a count or a bound that is wrong.
    #[test]
    fn the_check_sees_a_wrong_summary() {
        let mut pool: Pool<Key> = Pool::new(4);
        let mut blocks = KeyBlocks::default();
        pool.push_back(1);
        *pool.payload_mut(1) = Key { r: 2.0, a: 5.0, ..Key::default() };
        blocks.entered(0, true);
        blocks.renewed(0, &pool.payload()[0]);
        assert!(blocks.check(pool.slots(), pool.payload()).is_ok());
        blocks.tighten(0, 3.0, 5.0, None);
        assert!(blocks.check(pool.slots(), pool.payload()).is_err());
        blocks.tighten(0, 2.0, 5.0, None);
        blocks.left(0);
        assert!(blocks.check(pool.slots(), pool.payload()).is_err());
    }
}
