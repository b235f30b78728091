//! The victim tree: lower bounds of the candidates' scores over the pool's
//! slots, as a tree of summaries `FAN` slots wide, so that the victim is
//! found by visiting the few subtrees whose bound reaches the least score
//! instead of every slot (see `Replay::choose_tree` for the search).
//!
//! What a summary holds, over the candidates (members, not retained) below
//! it: how many there are (exact, for the reference's evaluation count),
//! the least ratio `cost / size` among their keys (as the cost and size of
//! one key that has it; `cost` alone where the score does not divide by
//! size), and the earliest last access (so the largest staleness). The
//! score of that ratio over that staleness, correctly rounded as the
//! reference rounds a score, is at most every candidate's score below: the
//! exact quotient is at most each candidate's exact quotient (its cost is
//! at least the ratio times its size, its staleness at most the largest),
//! and rounding to nearest is monotone. Unlike a bound with a margin, it
//! *equals* the score where the candidates below tie, which is what lets
//! the search pass over a subtree of ties it need not read.
//!
//! Bounds are only lowered as keys change (a renewed key is folded into
//! every summary above it, stopping where nothing changes: a node's bounds
//! are at most those of each child holding a candidate, so what covers the
//! key below is covered above); a candidate that leaves keeps its bounds
//! below its old summaries, and a node left with none starts anew when a
//! candidate enters it (the node above passed over it). So a summary is a
//! bound, not always the tightest: the search makes each node it reads
//! exact again from its children (`tighten`). Counts are always exact.
//! After a pool compaction moved the slots, the tree is built anew.
//!
//! The tree is kept only while the pool is large (`victim::TREE_FROM`):
//! below that, the one-level block scan reads fewer bytes per choice.

use super::victim::Bound;
use crate::heuristic::{score, Candidate};
use crate::pool::HOLE;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What the tree reads of a pool member (kept by slot beside the pool's
/// float keys while the tree is in use, renewed with them): `cost`, its
/// cost term or a lower bound of it (exact when `exact`: its regions are
/// exact); `size`, its size; `a`, its last internal access (the replay's
/// `never_access` when never accessed); and whether it is retained (never
/// a candidate). Exact integers, so that a summary's bound equals the
/// score where candidates tie.
#[derive(Clone, Copy, Default, PartialEq, Debug)]
pub(super) struct Key {
    pub(super) cost: u128,
    pub(super) size: u64,
    pub(super) a: i64,
    pub(super) exact: bool,
    pub(super) retained: bool,
}

impl Key {
    /// Whether the key gives its candidate's score: an exact cost, or
    /// never accessed where staleness counts (infinite staleness scores 0,
    /// or +inf for size 0, whatever the cost).
    #[inline]
    pub(super) fn known(&self, stale: bool, never: i64) -> bool {
        self.exact || (stale && self.a == never)
    }
}

/// Children a node. Wider nodes read more per level, narrower ones have
/// more levels; 8 matched the old one-level blocks.
pub(super) const FAN: usize = 8;

/// Where a summary's earliest access is when it holds no candidate.
const NONE_ACCESSED: i64 = i64::MAX;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Summary {
    /// The cost and size of a key of the least ratio (size 0: +inf; the
    /// size is 1 where the score does not divide by size).
    pub(super) cost: u128,
    pub(super) size: u64,
    /// The earliest last access (`i64::MIN`: never accessed).
    pub(super) a: i64,
    /// Candidates below.
    pub(super) live: u32,
}

pub(super) const EMPTY: Summary = Summary { cost: 0, size: 0, a: NONE_ACCESSED, live: 0 };

/// `x * y` as 192 bits, `(high, low)`.
#[inline]
fn wide_mul(x: u128, y: u64) -> (u128, u128) {
    let (hi, lo) = ((x >> 64) as u64 as u128, x as u64 as u128);
    let (y, low) = (y as u128, lo * y as u128);
    let mid = hi * y; // < 2^128
    let (low, carry) = low.overflowing_add(mid << 64);
    ((mid >> 64) + carry as u128, low)
}

/// Whether ratio `a` is below ratio `b` (`cost / size`, size 0 as +inf),
/// exactly.
#[inline]
fn ratio_below(a_cost: u128, a_size: u64, b_cost: u128, b_size: u64) -> bool {
    if a_size == 0 {
        return false;
    }
    if b_size == 0 {
        return true;
    }
    if a_size == b_size {
        return a_cost < b_cost;
    }
    wide_mul(a_cost, b_size) < wide_mul(b_cost, a_size)
}

impl Summary {
    /// The summary of one slot holding `key` (a hole or a retained member:
    /// none), the size counted where `by_size`.
    #[inline]
    pub(super) fn of(slot: u32, key: &Key, by_size: bool) -> Summary {
        if slot == HOLE || key.retained {
            return EMPTY;
        }
        Summary { cost: key.cost, size: if by_size { key.size } else { 1 }, a: key.a, live: 1 }
    }

    /// Both summaries' bounds (the lower of each), counts added.
    #[inline]
    fn merged(self, other: Summary) -> Summary {
        if other.live == 0 {
            return Summary { live: self.live, ..self };
        }
        if self.live == 0 {
            return Summary { live: other.live, ..other };
        }
        let (cost, size) = if ratio_below(other.cost, other.size, self.cost, self.size) {
            (other.cost, other.size)
        } else {
            (self.cost, self.size)
        };
        Summary { cost, size, a: self.a.min(other.a), live: self.live + other.live }
    }

    /// This summary's bounds lowered to also cover `key`'s (count as is);
    /// whether they changed.
    #[inline]
    fn lower(&mut self, leaf: &Summary) -> bool {
        if leaf.live == 0 {
            return false;
        }
        let mut changed = false;
        if ratio_below(leaf.cost, leaf.size, self.cost, self.size) {
            (self.cost, self.size) = (leaf.cost, leaf.size);
            changed = true;
        }
        if leaf.a < self.a {
            self.a = leaf.a;
            changed = true;
        }
        changed
    }

    /// At most the score, at clock `t`, of every candidate below (see the
    /// module's doc); +inf for none.
    #[inline]
    pub(super) fn bound(&self, size: bool, stale: bool, t: u64, never: i64) -> f64 {
        if self.live == 0 {
            return f64::INFINITY;
        }
        let staleness = if self.a == never { None } else { Some((t as i64 - self.a) as u64) };
        // The costs here are sums of compute, far below 2^127.
        let cost = i128::try_from(self.cost).unwrap_or(i128::MAX);
        score(size, stale, Candidate { cost, size: self.size, staleness })
    }
}

/// The summaries above the pool's slots: `levels[0]` summarizes blocks of
/// `FAN` slots, `levels[k]` blocks of `FAN` nodes of `levels[k - 1]`, up to
/// one root; for the slots as they were at compaction `at`.
#[derive(Clone, Debug, Default)]
pub(super) struct ScoreTree {
    levels: Vec<Vec<Summary>>,
    at: u64,
    by_size: bool,
}

/// The victim tree as the replay keeps it: whether it is in use, the
/// summaries, the exact keys by slot (renewed with the pool's float keys,
/// while in use and following the slots), and the search's scratch, its
/// heap (stage 1) and its stack (stage 2).
pub(super) struct VictimTree {
    pub(super) on: bool,
    pub(super) bounds: ScoreTree,
    pub(super) keys: Vec<Key>,
    pub(super) by_bound: BinaryHeap<Reverse<Bound<(bool, Place)>>>,
    pub(super) dfs: Vec<Place>,
}

impl VictimTree {
    pub(super) fn new(by_size: bool) -> Self {
        VictimTree { on: false, bounds: ScoreTree::new(by_size), keys: Vec::new(), by_bound: BinaryHeap::new(), dfs: Vec::new() }
    }

    /// Whether the tree is in use and follows the pool's slots (then every
    /// change of the pool and its keys must reach it).
    #[inline]
    pub(super) fn follows(&self, compactions: u64) -> bool {
        self.on && self.bounds.follows(compactions)
    }

    /// A member now occupies `slot`, the pool's last: counted if it is a
    /// candidate; its key comes with the next renewal.
    pub(super) fn entered(&mut self, slot: usize, candidate: bool) {
        if self.keys.len() <= slot {
            self.keys.resize(slot + 1, Key::default());
        }
        self.keys[slot] = Key { retained: !candidate, ..Key::default() };
        self.bounds.entered(slot, candidate);
    }

    /// The candidate at `slot` left the pool.
    pub(super) fn left(&mut self, slot: usize) {
        self.bounds.left(slot);
    }

    /// The member at `slot` has `key` now.
    pub(super) fn renewed(&mut self, slot: usize, key: Key) {
        self.keys[slot] = key;
        if !key.retained {
            self.bounds.renewed(slot, &key);
        }
    }
}

/// A place in the tree: `level` 0 is a slot, `level` k >= 1 a node of
/// `levels[k - 1]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Place {
    pub(super) level: u8,
    pub(super) index: u32,
}

impl ScoreTree {
    pub(super) fn new(by_size: bool) -> Self {
        ScoreTree { levels: Vec::new(), at: u64::MAX, by_size }
    }

    /// Drop the summaries: the tree follows no slots until rebuilt.
    pub(super) fn forget(&mut self) {
        self.levels.clear();
        self.at = u64::MAX;
    }

    /// Whether the tree follows the pool's slots (no compaction since it
    /// was built).
    #[inline]
    pub(super) fn follows(&self, compactions: u64) -> bool {
        self.at == compactions
    }

    /// Summarize the slots anew, exactly, from keys renewed since every
    /// member entered.
    pub(super) fn rebuild(&mut self, slots: &[u32], keys: &[Key], compactions: u64) {
        self.levels.clear();
        let by_size = self.by_size;
        let mut below: Vec<Summary> = slots
            .chunks(FAN)
            .zip(keys.chunks(FAN))
            .map(|(s, k)| s.iter().zip(k).fold(EMPTY, |acc, (&s, k)| acc.merged(Summary::of(s, k, by_size))))
            .collect();
        loop {
            let done = below.len() <= 1;
            let next: Vec<Summary> = below.chunks(FAN).map(|c| c.iter().fold(EMPTY, |acc, &x| acc.merged(x))).collect();
            self.levels.push(below);
            if done {
                break;
            }
            below = next;
        }
        self.at = compactions;
    }

    /// The top place, if any slot is summarized.
    pub(super) fn root(&self) -> Option<Place> {
        let top = self.levels.last()?;
        (!top.is_empty()).then_some(Place { level: self.levels.len() as u8, index: 0 })
    }

    /// The summary at a node (`level` >= 1).
    #[inline]
    pub(super) fn node(&self, p: Place) -> Summary {
        self.levels[p.level as usize - 1][p.index as usize]
    }

    /// The children of a node: places `[first, end)` of the level below
    /// (slots for level 1).
    #[inline]
    pub(super) fn children(&self, p: Place, slots: usize) -> std::ops::Range<u32> {
        let below = if p.level == 1 { slots } else { self.levels[p.level as usize - 2].len() };
        let first = p.index as usize * FAN;
        first as u32..(first + FAN).min(below) as u32
    }

    /// Make node `p` exact from its children as they are now (the slots'
    /// keys, or the nodes below), and return it.
    pub(super) fn tighten(&mut self, p: Place, slots: &[u32], keys: &[Key]) -> Summary {
        let range = self.children(p, slots.len());
        let by_size = self.by_size;
        let s = if p.level == 1 {
            range.fold(EMPTY, |acc, i| acc.merged(Summary::of(slots[i as usize], &keys[i as usize], by_size)))
        } else {
            let below = &self.levels[p.level as usize - 2];
            range.fold(EMPTY, |acc, i| acc.merged(below[i as usize]))
        };
        debug_assert_eq!(s.live, self.node(p).live, "a summary's count is exact");
        self.levels[p.level as usize - 1][p.index as usize] = s;
        s
    }

    /// A member now occupies `slot`, the pool's last, counted if it is a
    /// candidate (its key comes with `renewed`): the nodes on its path are
    /// made where missing, and a new root where the old one got a sibling.
    pub(super) fn entered(&mut self, slot: usize, candidate: bool) {
        if self.levels.is_empty() {
            self.levels.push(Vec::new());
        }
        let (mut i, mut k) = (slot / FAN, 0);
        loop {
            let level = &mut self.levels[k];
            if i == level.len() {
                level.push(EMPTY);
            }
            if candidate && level[i].live == 0 {
                // Bounds left by candidates gone are not covered by the
                // node above (which passes over a node of none): the node
                // starts anew, and the new key lowers it and what is above.
                level[i] = EMPTY;
            }
            level[i].live += candidate as u32;
            if level.len() == 1 {
                break; // the root
            }
            if k + 1 == self.levels.len() {
                // The root got a sibling: a new root over both (counting
                // this candidate already).
                let top = self.levels[k].iter().fold(EMPTY, |acc, &x| acc.merged(x));
                self.levels.push(vec![top]);
                break;
            }
            (i, k) = (i / FAN, k + 1);
        }
    }

    /// The candidate at `slot` left the pool; its bounds may stay.
    pub(super) fn left(&mut self, slot: usize) {
        let mut i = slot / FAN;
        for level in &mut self.levels {
            let n = &mut level[i];
            // Never below zero while the counts follow the pool: loudly if not.
            n.live = n.live.checked_sub(1).expect("a summary of the victim tree counts fewer candidates than left it");
            i /= FAN;
        }
    }

    /// The candidate at `slot` has key `key` now: every summary above it
    /// covers it (lowered where it did not).
    pub(super) fn renewed(&mut self, slot: usize, key: &Key) {
        let leaf = Summary::of(0, key, self.by_size);
        let mut i = slot / FAN;
        for level in &mut self.levels {
            if !level[i].lower(&leaf) {
                break;
            }
            i /= FAN;
        }
    }

    /// The self-check: every count exact, every bound at most the exact
    /// one, the shape one root over the slots.
    pub(super) fn check(&self, slots: &[u32], keys: &[Key]) -> Result<(), String> {
        let mut exact = ScoreTree::new(self.by_size);
        exact.rebuild(slots, keys, self.at);
        if exact.levels.len() != self.levels.len() && !slots.is_empty() {
            return Err(format!("the victim tree has {} levels over {} slots, not {}", self.levels.len(), slots.len(),
                               exact.levels.len()));
        }
        for (k, (mine, theirs)) in self.levels.iter().zip(&exact.levels).enumerate() {
            if mine.len() != theirs.len() {
                return Err(format!("level {k} of the victim tree has {} nodes, not {}", mine.len(), theirs.len()));
            }
            for (i, (m, e)) in mine.iter().zip(theirs).enumerate() {
                let loose = e.live > 0 && (ratio_below(e.cost, e.size, m.cost, m.size) || e.a < m.a);
                if m.live != e.live || loose {
                    return Err(format!("node {i} of level {k} of the victim tree is summarized wrongly: {m:?}, \
                                        exactly {e:?}"));
                }
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
        Key {
            cost: match rng.below(8) {
                0 => 0,
                1 => u64::MAX as u128 * 3,
                _ => rng.below(1000) as u128,
            },
            size: match rng.below(8) {
                0 => 0,
                _ => 1 + rng.below(1 << 40),
            },
            a: if rng.below(8) == 0 { i64::MIN } else { rng.below(1000) as i64 },
            exact: rng.below(2) == 0,
            retained,
        }
    }

    #[test]
    fn wide_products_compare_exactly() {
        let mut rng = SplitMix64::new(1);
        for _ in 0..100_000 {
            let (c1, c2) = (rng.below(u64::MAX) as u128 * (1 + rng.below(1 << 20)) as u128, rng.below(u64::MAX) as u128);
            let (m1, m2) = (1 + rng.below(u64::MAX - 1), 1 + rng.below(u64::MAX - 1));
            let (h1, l1) = wide_mul(c1, m2);
            let (h2, l2) = wide_mul(c2, m1);
            // Against 256-bit arithmetic by halves.
            let full = |x: u128, y: u64| {
                let (xh, xl) = (x >> 64, x & (u64::MAX as u128));
                let lo = xl * y as u128;
                let mid = xh * y as u128 + (lo >> 64);
                ((mid >> 64), ((mid & (u64::MAX as u128)) << 64) | (lo & (u64::MAX as u128)))
            };
            assert_eq!((h1, l1), full(c1, m2));
            assert_eq!((h2, l2), full(c2, m1));
            assert_eq!(ratio_below(c1, m1, c2, m2), (h1, l1) < (h2, l2));
        }
        assert!(ratio_below(5, 1, 0, 0) && !ratio_below(0, 0, 5, 1) && !ratio_below(0, 0, 0, 0));
    }

    /// The bound of a summary is at most the score of every candidate it
    /// covers, and equals it where they tie.
    #[test]
    fn a_summary_bounds_the_scores_below_it() {
        let mut rng = SplitMix64::new(2);
        for _ in 0..20_000 {
            let t = 1000 + rng.below(1 << 40);
            let keys: Vec<Key> = (0..1 + rng.below(12)).map(|_| key(&mut rng, false)).collect();
            for (size, stale) in [(true, true), (true, false), (false, true), (false, false)] {
                let s = keys.iter().fold(EMPTY, |acc, k| acc.merged(Summary::of(0, k, size)));
                let b = s.bound(size, stale, t, i64::MIN);
                let scores: Vec<f64> = keys
                    .iter()
                    .map(|k| Summary::of(0, k, size).bound(size, stale, t, i64::MIN))
                    .collect();
                let least = scores.iter().copied().fold(f64::INFINITY, f64::min);
                assert!(b <= least, "bound {b} above the least score {least} ({size}, {stale})");
                if keys.iter().all(|k| (k.cost, k.size, k.a) == (keys[0].cost, keys[0].size, keys[0].a)) {
                    assert_eq!(b, least);
                }
            }
        }
    }

    /// The replay's protocol (`pool_push`, `pool_remove`, `refresh_keys`,
    /// the search's rebuild and `tighten`) against the self-check, through
    /// many compactions; one storage in ten is retained.
    #[test]
    fn summaries_follow_the_pool() {
        let n = 300u32;
        let mut rng = SplitMix64::new(7);
        let mut pool: Pool<Key> = Pool::new(n as usize);
        let mut tree = ScoreTree::new(true);
        let retained = |s: u32| s.is_multiple_of(10);
        let mut recent: Vec<u32> = Vec::new();
        for step in 0..30_000u32 {
            // Half the time one of the last members pushed: the last block
            // empties and fills again, as a thrash's pool does.
            let s = match recent.last() {
                Some(&r) if rng.below(2) == 0 => r,
                _ => rng.below(n as u64) as u32,
            };
            if !tree.follows(pool.compactions()) {
                tree.rebuild(pool.slots(), pool.payload(), pool.compactions());
            }
            match rng.below(3) {
                0 => {
                    if pool.push_back(s) {
                        recent.push(s);
                        let k = key(&mut rng, retained(s));
                        *pool.payload_mut(s) = k;
                        if tree.follows(pool.compactions()) {
                            tree.entered(pool.slot_of(s), !retained(s));
                            if !retained(s) {
                                tree.renewed(pool.slot_of(s), &k);
                            }
                        }
                    }
                }
                1 => {
                    if pool.contains(s) {
                        if tree.follows(pool.compactions()) && !retained(s) {
                            tree.left(pool.slot_of(s));
                        }
                        pool.remove(s);
                        recent.retain(|&r| r != s);
                    }
                }
                _ => {
                    if pool.contains(s) {
                        let k = key(&mut rng, retained(s));
                        *pool.payload_mut(s) = k;
                        if tree.follows(pool.compactions()) && !retained(s) {
                            tree.renewed(pool.slot_of(s), &k);
                        }
                    }
                }
            }
            if tree.follows(pool.compactions()) {
                tree.check(pool.slots(), pool.payload()).unwrap();
                // A search's reads: from the root down through nodes holding
                // candidates, each tightened as it is reached.
                let mut at = tree.root();
                while let Some(p) = at.filter(|p| p.level > 0) {
                    tree.tighten(p, pool.slots(), pool.payload());
                    let live: Vec<u32> = tree
                        .children(p, pool.slots().len())
                        .filter(|&i| p.level == 1 || tree.node(Place { level: p.level - 1, index: i }).live > 0)
                        .collect();
                    at = (!live.is_empty()).then(|| Place { level: p.level - 1, index: live[rng.below(live.len() as u64) as usize] });
                }
            }
            if step.is_multiple_of(97) && tree.follows(pool.compactions()) {
                // A search tightens what it reads, from the bottom up.
                for level in 1..=tree.levels.len() as u8 {
                    for index in 0..tree.levels[level as usize - 1].len() as u32 {
                        tree.tighten(Place { level, index }, pool.slots(), pool.payload());
                    }
                }
                let mut exact = ScoreTree::new(true);
                exact.rebuild(pool.slots(), pool.payload(), pool.compactions());
                assert_eq!(tree.levels, exact.levels, "tightened in full, the tree is the exact one");
            }
        }
        assert!(pool.compactions() > 10, "the test compacts: {}", pool.compactions());
    }

    /// The self-check catches a count or a bound that is wrong.
    #[test]
    fn the_check_sees_a_wrong_summary() {
        let mut pool: Pool<Key> = Pool::new(4);
        let mut tree = ScoreTree::new(true);
        tree.rebuild(pool.slots(), pool.payload(), pool.compactions());
        pool.push_back(1);
        let k = Key { cost: 4, size: 2, a: 5, exact: true, retained: false };
        *pool.payload_mut(1) = k;
        tree.entered(0, true);
        tree.renewed(0, &k);
        assert!(tree.check(pool.slots(), pool.payload()).is_ok());
        tree.levels[0][0].cost = 5; // a ratio above the key's
        assert!(tree.check(pool.slots(), pool.payload()).is_err());
        tree.levels[0][0].cost = 4;
        tree.left(0);
        assert!(tree.check(pool.slots(), pool.payload()).is_err());
    }
}
