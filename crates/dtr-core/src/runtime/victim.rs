//! Victim choice: which pool member is evicted, as the reference decides it.
//!
//! **The rule** (the reference's `choose`): score every candidate (a pool
//! member not retained) in pool order; keep a candidate whose score is `<=`
//! the best so far; stop at the first score of 0. So the victim is the
//! first candidate scoring 0 if there is one, else the *last* candidate in
//! pool order among those of the least score (the tie rule), and the
//! reference counts as evaluated every candidate up to that zero, or all.
//! A score is the cost term (own compute, plus the evicted neighbourhood's
//! region sums for the region heuristics) over size and staleness,
//! correctly rounded as Python's `int / int` (`heuristic::score`).
//!
//! **The stages** for the region heuristics (`choose_scanned`):
//! 1. *the filter*: one pass over the keys kept beside the pool (`Key`: a
//!    lower bound of the cost over the size, the last access), a block of
//!    8 slots at a time (`key_blocks`), passing over a block whose bounds
//!    show that none of its slots can reach `best_hi`, an upper bound of
//!    the least score taken from candidates whose key is exact (seeded by
//!    the last choice's runner-up and each block's representative);
//! 2. *the exact phase* (`pick`): the slots kept, lowest bound first, each
//!    bounded from its regions' stored bounds, then made exact (its walks)
//!    only while it could still score at most the least so far; the
//!    forward region is read first and the reverse one not at all once
//!    the forward one shows the candidate cannot win.
//!
//! **Why it is the rule**: every bound is at most the score it bounds (the
//! float margins `HI` and `LO2` cover the keys' roundings), so a slot the
//! filter drops scores strictly above the least, and the exact phase reads
//! every candidate that could score it, keeping the reference's tie rule
//! and its first zero; the arguments are beside `LO2`, `skips`,
//! `score_floor`, `scan_seed` and `pick`.
//!
//! **The oracle**: `choose_bounded` scores every candidate in pool order as
//! the reference does; the self-check compares its choice and count with
//! the scan's at every eviction, and the golden records and the digests of
//! every heuristic over the public traces hold the replay to the reference.
//!
//! **The stages for a large pool** (`choose_tree`, from `TREE_FROM`
//! members), over the victim tree of exact score bounds (`score_tree`),
//! so that a choice reads a few paths of the tree, not every block:
//! 1. *the least score* `v`: a best-first search from the root, subtrees
//!    in the order of their bounds, reading a subtree only while its bound
//!    is below the least score found; a candidate whose cost is only
//!    bounded is bounded from its direct neighbours first and made exact
//!    only if it still could be the least (reached again: at an equal
//!    bound, before the places not read yet);
//! 2. *the victim*: with `v = 0`, the first candidate scoring 0 (a
//!    depth-first search from the left, counting the candidates it passes
//!    for the evaluation count); else the last candidate scoring `v` (from
//!    the right), passing over every subtree whose bound is above `v`.
//!
//! Why it is the rule: a subtree's bound is at most each of its
//! candidates' rounded scores, and equal to them where they tie (see
//! `score_tree`). Stage 1 stops when every subtree not read is bounded at
//! `v` or more, so `v` is the least. In stage 2 a subtree bounded above `v`
//! holds no candidate scoring `v`, and the search from the right (or the
//! left, for 0) meets candidates in reverse (or forward) pool order, so
//! the first it finds scoring `v` is the rule's. Without a zero the
//! reference evaluates every candidate: the root's count; with one, the
//! candidates before it, counted whole for every subtree passed over. The
//! self-check compares the tree's choice and count with `choose_bounded`'s
//! too, and `tree_from = 0` runs every choice through the tree (tests).

use super::key_blocks::BLOCK;
use super::lazy_regions::Lazy;
use super::score_tree::{self, Place, Summary};
use super::Replay;
use crate::error::EngineError;
use crate::events::{Decision, Scored};
use crate::heuristic::{int_to_f64, score, Candidate, Cost, CostParts, Heuristic};
use crate::pool::HOLE;
use crate::regions::{Direction, GraphView};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Pool members from which the victim tree replaces the block scan (and
/// half of it, below which the scan comes back). The scan reads a pool's
/// blocks in one pass, the tree a few paths at a higher cost per node.
pub const TREE_FROM: usize = 2048;

/// A score bound and what it bounds, ordered by the bound (`total_cmp`),
/// then by that: the order the heaps pop in. `Bound<u32>`: a candidate's
/// index in pool order (`pick`'s exact scoring); `Bound<(bool, Place)>`: a
/// place in the victim tree (stage 1), `false` for a candidate already
/// bounded from its neighbours, to be made exact when reached again, and
/// so popped before the places not read yet at the same bound.
#[derive(Clone, Copy)]
pub(super) struct Bound<T>(f64, T);

impl<T: Ord> PartialEq for Bound<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<T: Ord> Eq for Bound<T> {}

impl<T: Ord> PartialOrd for Bound<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: Ord> Ord for Bound<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// A victim candidate: its score, or a lower bound of it with the bounds of
/// its two region sums, and its rank among the pool's candidates (pool
/// order, retained storages not counted). Not `refined`, the bound is its
/// key's (`score_floor`) and the region bounds are not read yet.
#[derive(Clone, Copy)]
pub(super) struct Cand {
    s: u32,
    v: f64,
    exact: bool,
    refined: bool,
    fwd: u64,
    rev: u64,
    rank: u32,
}

/// What the victim scan reads of a pool member, beside it in the pool
/// (`Pool` payload), renewed by `Replay::refresh_keys` for the storages
/// `Replay::touch` lists: `r`, a lower bound of its cost term (exact when
/// `exact`) divided by its size if the score divides by size (+inf for size
/// 0, which always scores +inf); `a`, its last internal access as a float
/// (-inf when never accessed); and whether it is retained (never a
/// candidate).
#[derive(Clone, Copy, Default, PartialEq)]
pub(super) struct Key {
    pub(super) r: f64,
    pub(super) a: f64,
    pub(super) exact: bool,
    pub(super) retained: bool,
}

impl Key {
    /// Whether the scan knows its candidate's score: an exact cost, or
    /// never accessed where staleness counts (infinite staleness).
    #[inline]
    fn known(&self, stale: bool) -> bool {
        self.exact || (stale && self.a == f64::NEG_INFINITY)
    }
}

/// Margins of the scan's float arithmetic. A key's `r` is within
/// `(1 ± 2^-51)` of the exact ratio of its cost to its size (the cost is
/// one conversion of an exact integer, `r` one division), and its
/// staleness `st` is exact (a difference of integers below 2^53). So:
///
/// - `r / st * HI` (two more roundings) is at least the exact score of a
///   known candidate, hence at least its correctly rounded score (rounding
///   to nearest is monotone, and a double rounds to itself): an upper bound
///   `best_hi` of the smallest score;
/// - `r * LO2 > best_hi * st` (each product rounded) implies an exact score
///   above `best_hi * (1 + 2^-45)`, more than one ulp above any double up
///   to `best_hi`: that candidate scores strictly above the minimum. Where
///   `best_hi * st` is NaN (0 * inf, inf * 0) the comparison is false and
///   the candidate is kept, as it must be.
const HI: f64 = 1.0 + 1.0 / (1u64 << 45) as f64;
const LO2: f64 = 1.0 - 1.0 / (1u64 << 44) as f64;

/// The filter (see `LO2`): false only when a key of ratio `r` and
/// staleness `st` scores strictly above every double up to `best_hi`; a NaN
/// product keeps the candidate.
#[inline]
fn may_score_within(r: f64, st: f64, best_hi: f64) -> bool {
    (r * LO2).partial_cmp(&(best_hi * st)) != Some(Ordering::Greater)
}

/// Whether no key of ratio at least `r_min` and last access at least
/// `a_min` passes the filter against `best_hi` (see `LO2`), so that a block
/// so bounded may be passed over.
///
/// Why. Such a key's staleness `st` is at most `t - a_min` (exact, or +inf),
/// and rounding is monotone, so for `best_hi >= 0` its `r * LO2` is at least
/// `r_min * LO2` and `best_hi * st` at most `best_hi * (t - a_min)`: the
/// filter's `>` holds for the key when it holds for the bounds. A NaN
/// product (`0 * inf`) keeps the block, and a +inf `best_hi` keeps every
/// block. A key the block would have shown improving the scan's best
/// scores above `best_hi` anyway: the bound stays a bound, only a looser
/// one; a known zero (r = 0, or never accessed: a = -inf) never fails.
#[inline]
fn skips(r_min: f64, a_min: f64, stale: bool, t: f64, best_hi: f64) -> bool {
    let st_max = if stale { t - a_min } else { 1.0 };
    !may_score_within(r_min, st_max, best_hi)
}

/// A lower bound of the score of the candidate whose key has ratio `r` and
/// staleness `st` (0 where it is NaN: 0 over a staleness of 0).
///
/// Why. `r` is within `(1 ± 2^-51)` of the ratio of the candidate's cost
/// bound to its size (see `HI`), itself at most the exact ratio; `r * LO2 /
/// st` takes two more roundings, so it lies below the exact score, and so
/// below the score rounded (rounding is monotone). A score of a staleness
/// of 0 is +inf.
#[inline]
fn score_floor(r: f64, st: f64) -> f64 {
    let b = r * LO2 / st;
    if b.is_nan() {
        0.0
    } else {
        b
    }
}

/// The staleness `st` of a candidate's key that may seed the scan (see
/// `Replay::scan_seed`): known as the scan knows it, of positive, finite
/// `q = r / st` (a finite staleness leaves out the never accessed, whose q
/// is 0 where staleness counts).
#[inline]
fn seed_staleness(key: &Key, stale: bool, t: f64) -> Option<f64> {
    let st = if stale { t - key.a } else { 1.0 };
    (key.exact && !key.retained && positive_finite_q(key.r, st)).then_some(st)
}

/// Whether `q = r / st` is positive and finite, with both finite.
#[inline]
fn positive_finite_q(r: f64, st: f64) -> bool {
    st > 0.0 && st < f64::INFINITY && r > 0.0 && r < f64::INFINITY
}

/// The clock below which staleness is an exact float (see `HI`).
const EXACT_CLOCK: u64 = 1 << 53;

impl Replay<'_> {
    pub(super) fn choose(&mut self) -> Result<Option<u32>, EngineError> {
        match self.cfg.heuristic {
            Heuristic::Random => {
                self.counters.heuristic_evals += 1;
                let candidates: Vec<u32> = self.pool.iter().filter(|&s| !self.retained[s as usize]).collect();
                if candidates.is_empty() {
                    return Ok(None);
                }
                let k = self.rng.below(candidates.len() as u64) as usize;
                Ok(Some(candidates[k]))
            }
            Heuristic::Score { cost: cost @ (Cost::Neighbourhood | Cost::Msps), size, stale } => {
                if self.scan.keyed {
                    self.tree_if_large();
                }
                let (chosen, evals) = if !self.scan.keyed || (!self.scan.tree.on && self.clock >= EXACT_CLOCK) {
                    self.choose_bounded(cost, size, stale)
                } else {
                    self.refresh_keys(cost, size);
                    if self.cfg.self_check {
                        self.check_keys(cost, size)?;
                    }
                    let (picked, by) = if self.scan.tree.on {
                        (self.choose_tree(cost, size, stale)?, "victim tree")
                    } else {
                        (self.choose_scanned(cost, size, stale), "key scan")
                    };
                    if self.cfg.self_check {
                        let reference = self.choose_bounded(cost, size, stale);
                        if reference != picked {
                            return Err(EngineError::Invariant(format!(
                                "the {by} chose {picked:?} (victim, evaluations), the full scan {reference:?}"
                            )));
                        }
                    }
                    picked
                };
                self.counters.heuristic_evals += evals;
                Ok(chosen)
            }
            h => {
                let (chosen, evals) = self.choose_plain(h);
                self.counters.heuristic_evals += evals;
                Ok(chosen)
            }
        }
    }

    /// The rule as the reference runs it, for a heuristic whose score reads
    /// no region: every candidate scored in pool order, up to the first
    /// zero; the victim and the evaluation count.
    fn choose_plain(&mut self, h: Heuristic) -> (Option<u32>, u64) {
        let (mut best, mut best_s, mut evals, mut i) = (f64::INFINITY, None, 0, 0);
        // Scoring never changes the pool (it may compress the equivalence
        // classes' paths).
        while let Some(s) = self.next_candidate(&mut i) {
            evals += 1;
            let h_s = self.score(h, s);
            if h_s <= best {
                best = h_s;
                best_s = Some(s);
            }
            if h_s == 0.0 {
                break;
            }
        }
        (best_s, evals)
    }

    /// The pool member at slot `*i` or after it that is a victim candidate
    /// (not a hole, not retained), moving `*i` past it; None at the end. An
    /// index rather than an iterator, so that scoring may borrow `self`
    /// mutably between calls.
    #[inline]
    fn next_candidate(&self, i: &mut usize) -> Option<u32> {
        let slots = self.pool.slots();
        while *i < slots.len() {
            let s = slots[*i];
            *i += 1;
            if s != HOLE && !self.retained[s as usize] {
                return Some(s);
            }
        }
        None
    }

    /// List `s` for a fresh key before the next victim scan: called wherever
    /// something its key reads changes (its compute, regions, their bounds,
    /// its last access, its pool membership).
    #[inline]
    pub(super) fn touch(&mut self, s: u32) {
        // Outside the pool a key is not read; entering it touches it.
        if !self.pool.contains(s) {
            return;
        }
        if let Some(d) = self.scan.key_dirty.get_mut(s as usize) {
            if !*d {
                *d = true;
                self.scan.dirty_keys.push(s);
            }
        }
    }

    /// Keep the victim tree from `tree_from` pool members, and drop it
    /// below half of that (built anew, keys and all, when next used).
    fn tree_if_large(&mut self) {
        let n = self.pool.len();
        if !self.scan.tree.on && n >= self.cfg.tree_from {
            self.scan.tree.on = true;
            self.scan.tree.bounds.forget();
        } else if self.scan.tree.on && n < self.cfg.tree_from / 2 {
            self.scan.tree.on = false;
        }
    }

    /// The key of `s` as it is now (see `Key`).
    #[inline(always)]
    fn fresh_key(&mut self, cost: Cost, size: bool, s: u32) -> Key {
        // The stored bounds only: most keys are renewed and never read closely.
        let (term, _, _, exact) = self.bounded_term(cost, s, false);
        self.float_key(size, s, term, exact)
    }

    /// The float key of `s` from its cost term (or a lower bound of it).
    #[inline(always)]
    fn float_key(&self, size: bool, s: u32, term: i128, exact: bool) -> Key {
        let si = s as usize;
        let k = int_to_f64(term);
        let m = self.trace.storage_size(s);
        let a = self.last_access_int[si];
        Key {
            r: match (size, m) {
                (false, _) => k,
                (true, 0) => f64::INFINITY,
                (true, m) => k / m as f64,
            },
            a: if a == self.never_access { f64::NEG_INFINITY } else { a as f64 },
            exact,
            retained: self.retained[si],
        }
    }

    /// The victim tree's key of `s` from its cost term (or a lower bound).
    #[inline(always)]
    fn tree_key(&self, s: u32, term: i128, exact: bool) -> score_tree::Key {
        let si = s as usize;
        score_tree::Key {
            // Region costs are sums of compute: never negative.
            cost: u128::try_from(term).expect("a region cost term is not negative"),
            size: self.trace.storage_size(s),
            a: self.last_access_int[si],
            exact,
            retained: self.retained[si],
        }
    }

    /// The victim tree's keys of every slot, as they are now.
    fn fresh_tree_keys(&mut self, cost: Cost) -> Vec<score_tree::Key> {
        let mut keys = Vec::with_capacity(self.pool.slots().len());
        for i in 0..self.pool.slots().len() {
            let s = self.pool.slots()[i];
            keys.push(if s == HOLE {
                score_tree::Key::default()
            } else {
                let (term, _, _, exact) = self.bounded_term(cost, s, false);
                self.tree_key(s, term, exact)
            });
        }
        keys
    }

    /// The cost term of `s` from bounds of the forward and reverse region
    /// sums it reads (0 for a region it does not read), those bounds, and
    /// whether both are exact (then so is the term); with `neighbours`,
    /// stale bounds are raised by the direct neighbours first.
    #[inline(always)]
    fn bounded_term(&mut self, cost: Cost, s: u32, neighbours: bool) -> (i128, u64, u64, bool) {
        let both = cost == Cost::Neighbourhood;
        if neighbours {
            if both {
                self.raise_bound(s, Direction::Forward);
            }
            self.raise_bound(s, Direction::Reverse);
        }
        let (fwd, fwd_exact) = if both { self.stored_bound(s, Direction::Forward) } else { (0, true) };
        let (rev, rev_exact) = self.stored_bound(s, Direction::Reverse);
        let parts = CostParts { own: self.compute[s as usize] as i128, forward: fwd as i128, reverse: rev as i128, classes: 0 };
        (cost.term(parts), fwd, rev, fwd_exact && rev_exact)
    }

    /// Renew the keys of the touched pool members.
    pub(super) fn refresh_keys(&mut self, cost: Cost, size: bool) {
        let mut dirty = std::mem::take(&mut self.scan.dirty_keys);
        // Summaries that no longer follow the slots are rebuilt by the scan.
        let follows = self.scan.blocks.follows(self.pool.compactions());
        let tree_follows = self.scan.tree.follows(self.pool.compactions());
        for &s in &dirty {
            self.scan.key_dirty[s as usize] = false;
            // A storage outside the pool is touched again when it enters it.
            if self.pool.contains(s) {
                let (term, _, _, exact) = self.bounded_term(cost, s, false);
                let key = self.float_key(size, s, term, exact);
                *self.pool.payload_mut(s) = key;
                if follows && !key.retained {
                    self.scan.blocks.renewed(self.pool.slot_of(s), &key);
                }
                if tree_follows {
                    let key = self.tree_key(s, term, exact);
                    self.scan.tree.renewed(self.pool.slot_of(s), key);
                }
            }
        }
        dirty.clear();
        self.scan.dirty_keys = dirty;
    }

    /// The self-check of the keys: every pool member's equals a fresh one.
    fn check_keys(&mut self, cost: Cost, size: bool) -> Result<(), EngineError> {
        let members: Vec<u32> = self.pool.iter().collect();
        for s in members {
            let (kept, fresh) = (*self.pool.payload_mut(s), self.fresh_key(cost, size, s));
            if kept != fresh || kept.r.to_bits() != fresh.r.to_bits() {
                return Err(EngineError::Invariant(format!("storage {s}: its victim-scan key is out of date")));
            }
        }
        if self.scan.blocks.follows(self.pool.compactions()) {
            self.scan.blocks.check(self.pool.slots(), self.pool.payload()).map_err(EngineError::Invariant)?;
        }
        if self.scan.tree.follows(self.pool.compactions()) {
            let fresh = self.fresh_tree_keys(cost);
            let (slots, kept) = (self.pool.slots(), &self.scan.tree.keys);
            // Holes' keys are never read; every member's must be fresh.
            if let Some(i) = (0..slots.len()).find(|&i| slots[i] != HOLE && kept.get(i) != Some(&fresh[i])) {
                return Err(EngineError::Invariant(format!("storage {}: its victim-tree key is out of date", slots[i])));
            }
            self.scan.tree.bounds.check(slots, kept).map_err(EngineError::Invariant)?;
        }
        Ok(())
    }

    /// The reference's scan for region scores from the keys (renewed by
    /// `refresh_keys` before), in one pass over the contiguous keys that
    /// passes over the blocks whose summaries fail the filter (`skips`),
    /// then the exact phase of `pick` for the few that could be chosen.
    ///
    /// Why it picks what the full scan picks. A known candidate (exact cost,
    /// or never accessed: infinite staleness scores 0 whatever the cost)
    /// gives an upper bound `best_hi` of the smallest score (see `HI`); a
    /// key whose cost is only a lower bound scores below its candidate (a
    /// score rises with its cost). So a candidate the filter drops (see
    /// `LO2`) scores strictly above the minimum: leaving it out changes
    /// neither the minimum nor the last candidate attaining it. A zero is
    /// exact in floats too: the scan stops at the first known zero, as the
    /// reference does, and only the candidates before it that may still
    /// score 0 are kept (`best_hi` = 0).
    pub(super) fn choose_scanned(&mut self, cost: Cost, size: bool, stale: bool) -> (Option<u32>, u64) {
        if !self.scan.blocks.follows(self.pool.compactions()) {
            self.scan.blocks.rebuild(self.pool.slots(), self.pool.payload(), self.pool.compactions());
        }
        let t = self.clock as f64;
        // One pass: the known candidate of the smallest q = r / st so far,
        // found by comparing products, its `best_hi` (a division only when
        // it changes), and the slots that pass the filter against the
        // `best_hi` of their time, a superset of those passing the last one.
        let (mut br, mut bst, mut best_hi) = self.scan_seed(stale, t);
        let (slots, keys, blocks) = (self.pool.slots(), self.pool.payload(), &mut self.scan.blocks);
        let mut kept = std::mem::take(&mut self.scan.kept);
        kept.clear();
        let mut rank = 0u32;
        debug_assert_eq!(slots.len(), keys.len());
        'scan: for b in 0..blocks.len() {
            // A block whose bounds fail the filter holds no slot that
            // passes it (see `skips`): only its candidates are counted.
            let block = blocks.get(b);
            if block.live == 0 {
                continue;
            }
            if skips(block.r_min, block.a_min, stale, t, best_hi) {
                rank += block.live;
                continue;
            }
            let lo = b * BLOCK;
            let hi = (lo + BLOCK).min(slots.len());
            // The block's exact bounds and its representative (see
            // `scan_seed`), read on the way.
            let (mut r_min, mut a_min) = (f64::INFINITY, f64::INFINITY);
            let (mut rep, mut rep_r, mut rep_st) = (None, f64::INFINITY, 1.0);
            // Zipped: no bounds check a slot (the pool keeps one key a slot).
            for (i, (&slot, key)) in slots[lo..hi].iter().zip(&keys[lo..hi]).enumerate() {
                let i = lo + i;
                if slot == HOLE || key.retained {
                    continue;
                }
                r_min = r_min.min(key.r);
                a_min = a_min.min(key.a);
                let st = if stale { t - key.a } else { 1.0 };
                if key.known(stale) {
                    // q is 0 for no cost with some staleness, or infinite
                    // staleness (finite r); +inf for no staleness (0/0, inf/inf).
                    if (key.r == 0.0 && st > 0.0) || (st == f64::INFINITY && key.r < f64::INFINITY) {
                        best_hi = 0.0;
                        kept.push((i as u32, rank));
                        rank += 1;
                        break 'scan;
                    }
                    if st > 0.0 && key.r < f64::INFINITY && key.r * bst < br * st {
                        (br, bst) = (key.r, st);
                        best_hi = br / bst * HI;
                    }
                    // A seed as `seed_staleness` has it (the key is known).
                    if positive_finite_q(key.r, st) && key.r * rep_st < rep_r * st {
                        (rep, rep_r, rep_st) = (Some(i), key.r, st);
                    }
                }
                if may_score_within(key.r, st, best_hi) {
                    kept.push((i as u32, rank));
                }
                rank += 1;
            }
            blocks.tighten(b, r_min, a_min, rep);
        }
        let mut cands = std::mem::take(&mut self.scan.candidates);
        cands.clear();
        for &(i, at) in &kept {
            let key = self.pool.payload()[i as usize];
            let st = if stale { t - key.a } else { 1.0 };
            if may_score_within(key.r, st, best_hi) {
                let s = self.pool.slots()[i as usize];
                // Known candidates are scored now; the others are bounded
                // by their keys until `pick` reaches them (most never are).
                let c = if key.known(stale) {
                    self.candidate(cost, size, stale, s, at)
                } else {
                    Cand { s, v: score_floor(key.r, st), exact: false, refined: false, fwd: 0, rev: 0, rank: at }
                };
                cands.push(c);
            }
        }
        self.scan.kept = kept;
        let picked = self.pick(cands, cost, size, stale, rank);
        // The next scan's seed: the known candidate scoring least but the
        // victim (it leaves the pool).
        self.scan.hint = self
            .scan
            .candidates
            .iter()
            .filter(|c| c.exact && Some(c.s) != picked.0 && c.v > 0.0 && c.v.is_finite())
            .min_by(|a, b| a.v.total_cmp(&b.v))
            .map(|c| c.s);
        picked
    }

    /// The scan's starting best `(r, st, best_hi)`: the least `q = r / st`
    /// among the seeds that are still known candidates of positive, finite
    /// `q` (see `seed_staleness`), else none (`best_hi` = +inf). The seeds
    /// are the last scan's runner-up and each block's representative (the
    /// slot where the scan that last read the block in full found its
    /// least known `q`), whatever holds those slots now.
    ///
    /// Why a seed changes nothing. `best_hi` is only ever an upper bound of
    /// the smallest score among the candidates the reference compares (all
    /// of them, or up to the first zero, whose minimum is 0 anyway); a
    /// seed is one of them, scanned like the others, so its `best_hi` is
    /// such a bound too, and the filter then drops only candidates scoring
    /// strictly above the minimum (see `LO2`). The scan starts with a
    /// tight bound instead of keeping every slot up to the first good
    /// candidate in pool order, and passes over more blocks (Inception-v4
    /// at 0.20 of its peak: 506 slots kept a scan with no seed, 164 with
    /// the runner-up; with the representatives too, 7 % fewer
    /// instructions in the whole replay).
    fn scan_seed(&self, stale: bool, t: f64) -> (f64, f64, f64) {
        let (slots, keys) = (self.pool.slots(), self.pool.payload());
        let hint = self.scan.hint.filter(|&h| self.pool.contains(h)).map(|h| self.pool.slot_of(h));
        let reps = self.scan.blocks.reps();
        let (mut br, mut bst) = (f64::INFINITY, 1.0);
        for i in hint.into_iter().chain(reps) {
            let (Some(&slot), Some(key)) = (slots.get(i), keys.get(i)) else { continue };
            if slot == HOLE {
                continue;
            }
            if let Some(st) = seed_staleness(key, stale, t) {
                if key.r * bst < br * st {
                    (br, bst) = (key.r, st);
                }
            }
        }
        if br < f64::INFINITY {
            (br, bst, br / bst * HI)
        } else {
            (f64::INFINITY, 1.0, f64::INFINITY)
        }
    }

    /// The victim and the reference's evaluation count, from the victim
    /// tree (keys renewed by `refresh_keys` before): the large pool's
    /// stages of this file's doc.
    pub(super) fn choose_tree(&mut self, cost: Cost, size: bool, stale: bool) -> Result<(Option<u32>, u64), EngineError> {
        if !self.scan.tree.bounds.follows(self.pool.compactions()) {
            self.scan.tree.keys = self.fresh_tree_keys(cost);
            self.scan.tree.bounds.rebuild(self.pool.slots(), &self.scan.tree.keys, self.pool.compactions());
        }
        let Some(root) = self.scan.tree.bounds.root() else { return Ok((None, 0)) };
        let live = self.scan.tree.bounds.tighten(root, self.pool.slots(), &self.scan.tree.keys).live;
        if live == 0 {
            return Ok((None, 0));
        }
        let v = self.least_score(cost, size, stale, root);
        // The reference evaluates every candidate unless it meets a zero.
        let evaluated = |rank: u32| if v == 0.0 { rank as u64 + 1 } else { live as u64 };
        let found = self.find_scoring(cost, size, stale, root, v).map(|(s, rank)| (Some(s), evaluated(rank)));
        found.ok_or_else(|| EngineError::Invariant(format!("the victim tree found no candidate scoring its least score {v}")))
    }

    /// The bound of place `p` at the clock now: a slot's from its key (its
    /// score where the key is known), a node's from its summary.
    #[inline]
    fn bound_at(&self, p: Place, size: bool, stale: bool) -> f64 {
        let s = if p.level == 0 {
            let i = p.index as usize;
            Summary::of(self.pool.slots()[i], &self.scan.tree.keys[i], size)
        } else {
            self.scan.tree.bounds.node(p)
        };
        s.bound(size, stale, self.clock, self.never_access)
    }

    /// Stage 1: the least score among the candidates (+inf where every one
    /// scores +inf).
    fn least_score(&mut self, cost: Cost, size: bool, stale: bool, root: Place) -> f64 {
        let mut heap = std::mem::take(&mut self.scan.tree.by_bound);
        heap.clear();
        heap.push(Reverse(Bound(self.bound_at(root, size, stale), (true, root))));
        let mut v = f64::INFINITY;
        while let Some(Reverse(Bound(b, (unread, p)))) = heap.pop() {
            // (Scores and bounds are never NaN: a 0/0 scores +inf.)
            if b >= v {
                break;
            }
            if p.level == 0 {
                let i = p.index as usize;
                let (s, key) = (self.pool.slots()[i], self.scan.tree.keys[i]);
                if key.known(stale, self.never_access) {
                    v = v.min(b);
                } else if !unread {
                    if let Some(x) = self.exact_score_within(cost, size, stale, s, v) {
                        v = v.min(x);
                    }
                } else {
                    // Bounded from its neighbours first (cheap), and back in
                    // the heap at that bound; made exact only if reached again.
                    // At a tie it comes before the unread places: an exact
                    // score equal to the bound ends the search (a skip chain's
                    // thousands of storages tied on a bound that an absorb of
                    // one storage makes exact were each read before).
                    let c = self.candidate(cost, size, stale, s, 0);
                    if c.exact {
                        v = v.min(c.v);
                    } else if c.v < v {
                        heap.push(Reverse(Bound(c.v, (false, p))));
                    }
                }
                continue;
            }
            let node = self.scan.tree.bounds.tighten(p, self.pool.slots(), &self.scan.tree.keys);
            if node.bound(size, stale, self.clock, self.never_access) >= v {
                continue;
            }
            for index in self.scan.tree.bounds.children(p, self.pool.slots().len()) {
                let child = Place { level: p.level - 1, index };
                let cb = self.bound_at(child, size, stale);
                if cb < v {
                    heap.push(Reverse(Bound(cb, (true, child))));
                }
            }
        }
        self.scan.tree.by_bound = heap;
        v
    }

    /// Stage 2: the rule's victim among the candidates scoring `v`, the
    /// least score, and how many candidates come before it in pool order.
    /// With `v = 0` the first of them (a depth-first search from the left,
    /// counting what it passes: the reference evaluates up to that zero);
    /// else the last (from the right). A subtree bounded above `v` holds
    /// none of them and is passed over (counted whole).
    fn find_scoring(&mut self, cost: Cost, size: bool, stale: bool, root: Place, v: f64) -> Option<(u32, u32)> {
        let from_left = v == 0.0;
        let mut stack = std::mem::take(&mut self.scan.tree.dfs);
        stack.clear();
        stack.push(root);
        let mut rank = 0u32;
        let mut found = None;
        while let Some(p) = stack.pop() {
            if p.level == 0 {
                let i = p.index as usize;
                let (s, key) = (self.pool.slots()[i], self.scan.tree.keys[i]);
                if s == HOLE || key.retained {
                    continue;
                }
                if let Some(x) = self.score_within(cost, size, stale, p, v) {
                    debug_assert!(x == v, "stage 1 missed a score {x} below {v}");
                    found = Some((s, rank));
                    break;
                }
                rank += 1;
                continue;
            }
            let node = self.scan.tree.bounds.tighten(p, self.pool.slots(), &self.scan.tree.keys);
            if node.live == 0 {
                continue;
            }
            if node.bound(size, stale, self.clock, self.never_access) > v {
                rank += node.live;
                continue;
            }
            // The next child in the search's order on top.
            let children = self.scan.tree.bounds.children(p, self.pool.slots().len()).map(|index| Place { level: p.level - 1, index });
            if from_left {
                stack.extend(children.rev());
            } else {
                stack.extend(children);
            }
        }
        self.scan.tree.dfs = stack;
        found
    }

    /// The exact score of the candidate at slot `p` if it is at most
    /// `best`, else None (its bound, or its regions made exact, show it
    /// above).
    fn score_within(&mut self, cost: Cost, size: bool, stale: bool, p: Place, best: f64) -> Option<f64> {
        let b = self.bound_at(p, size, stale);
        if b > best {
            return None;
        }
        let i = p.index as usize;
        let (s, key) = (self.pool.slots()[i], self.scan.tree.keys[i]);
        if key.known(stale, self.never_access) {
            return Some(b);
        }
        let c = self.candidate(cost, size, stale, s, 0);
        if c.exact {
            return (c.v <= best).then_some(c.v);
        }
        if c.v > best {
            return None;
        }
        self.exact_score_within(cost, size, stale, s, best)
    }

    /// The exact score of candidate `s` if it is at most `best`, else None:
    /// its regions made exact (the forward one first; the reverse one is
    /// not read once the forward one shows it cannot score `best`).
    fn exact_score_within(&mut self, cost: Cost, size: bool, stale: bool, s: u32, best: f64) -> Option<f64> {
        let (_, fwd, rev, _) = self.bounded_term(cost, s, false);
        let limit = self.cost_limit(size, stale, s, best);
        let own = self.compute[s as usize] as i128;
        let mut forward = fwd as i128;
        if cost == Cost::Neighbourhood {
            forward = self.exact_within(s, Direction::Forward, limit.map(|k| k - own - rev as i128))? as i128;
        }
        let reverse = self.exact_within(s, Direction::Reverse, limit.map(|k| k - own - forward))? as i128;
        let x = self.candidate_score(size, stale, s, cost.term(CostParts { own, forward, reverse, classes: 0 }));
        (x <= best).then_some(x)
    }

    /// A candidate for `pick`: its exact score, or the score of its bound.
    fn candidate(&mut self, cost: Cost, size: bool, stale: bool, s: u32, rank: u32) -> Cand {
        let (term, fwd, rev, exact) = self.bounded_term(cost, s, true);
        let v = self.candidate_score(size, stale, s, term);
        // A never-accessed storage's staleness is infinite: its score is
        // exact whatever its cost (0, or +inf for size 0).
        let exact = exact || (stale && self.last_access_int[s as usize] == self.never_access);
        Cand { s, v, exact, refined: true, fwd, rev, rank }
    }

    /// The reference's scan for region scores over every pool member, each
    /// scored from its bounds (the reference's order of work when every
    /// region is exact; with a clock past 2^53, where keys are not exact
    /// enough, and as the self-check of `choose_scanned`).
    pub(super) fn choose_bounded(&mut self, cost: Cost, size: bool, stale: bool) -> (Option<u32>, u64) {
        let mut cands = std::mem::take(&mut self.scan.candidates);
        cands.clear();
        let mut rank = 0u32;
        let mut i = 0;
        // Scoring never changes the pool.
        while let Some(s) = self.next_candidate(&mut i) {
            let c = self.candidate(cost, size, stale, s, rank);
            rank += 1;
            cands.push(c);
            if c.exact && c.v == 0.0 {
                break;
            }
        }
        self.pick(cands, cost, size, stale, rank)
    }

    /// The victim among `cands` (in pool order, holding every candidate that
    /// may be chosen; `scored` candidates were scanned in all), and the
    /// reference's evaluation count, without reading every region.
    ///
    /// The reference keeps a candidate whose score is `<=` the best so far
    /// and stops at the first score 0: it picks the first zero in pool
    /// order, else the last candidate with the minimal score, and scores the
    /// candidates up to that zero (or all). A region that is not exact is
    /// bounded below (`stored_bound`): a stale one by its bound (see
    /// `mark_stale`), one owed absorbs by its current compute plus that of
    /// the storages it is owed (an absorb adds at least that). A score rises
    /// with its cost term, so a candidate whose bound
    /// exceeds an exact score cannot be picked; and once its forward region
    /// shows that it cannot win, its reverse region is not read. A
    /// candidate still bounded by its key is bounded by its regions' stored
    /// bounds when it is first reached (Inception-v4 at 0.20 of its peak: 5
    /// reached of 33 an eviction), and a zero so found is the first in pool
    /// order as the exact phase's are: any earlier one was bounded by 0
    /// before.
    fn pick(&mut self, mut cands: Vec<Cand>, cost: Cost, size: bool, stale: bool, scored: u32) -> (Option<u32>, u64) {
        let both = cost == Cost::Neighbourhood;
        let mut best = f64::INFINITY;
        let mut first_zero = None;
        for (i, c) in cands.iter().enumerate() {
            if c.exact {
                best = best.min(c.v);
                if c.v == 0.0 {
                    first_zero = Some(i);
                    break;
                }
            }
        }
        // Score exactly, lowest bound first (ties in pool order), what could
        // still be picked: a heap, since the scan usually stops after a few.
        let end = first_zero.map_or(cands.len(), |z| z + 1);
        let mut bounded = std::mem::take(&mut self.scan.bounded);
        bounded.clear();
        bounded.extend(
            (0..end as u32)
                .filter(|&i| !cands[i as usize].exact && cands[i as usize].v <= best)
                .map(|i| Reverse(Bound(cands[i as usize].v, i))),
        );
        let mut heap = BinaryHeap::from(bounded);
        while let Some(Reverse(Bound(_, i))) = heap.pop() {
            let Cand { s, v: bound, refined, fwd, rev, rank, .. } = cands[i as usize];
            if bound > best {
                break;
            }
            if !refined {
                // Bounded by its key so far: now by the stored bounds (at
                // least as high), and back in the heap at that bound.
                let c = self.candidate(cost, size, stale, s, rank);
                cands[i as usize] = c;
                if c.exact {
                    best = best.min(c.v);
                    if c.v == 0.0 {
                        first_zero = Some(i as usize);
                        break;
                    }
                } else if c.v <= best {
                    heap.push(Reverse(Bound(c.v, i)));
                }
                continue;
            }
            // The largest cost term that still scores <= best (None: any);
            // each region's share of it inverts the sum `Cost::term` makes.
            let limit = self.cost_limit(size, stale, s, best);
            let c = self.compute[s as usize] as i128;
            let mut fwd_exact = fwd as i128;
            if both {
                match self.exact_within(s, Direction::Forward, limit.map(|k| k - c - rev as i128)) {
                    Some(x) => fwd_exact = x as i128,
                    None => continue, // cannot win
                }
            }
            let Some(rev_exact) = self.exact_within(s, Direction::Reverse, limit.map(|k| k - c - fwd_exact)) else {
                continue;
            };
            let parts = CostParts { own: c, forward: fwd_exact, reverse: rev_exact as i128, classes: 0 };
            let v = self.candidate_score(size, stale, s, cost.term(parts));
            cands[i as usize] = Cand { s, v, exact: true, refined: true, fwd: 0, rev: 0, rank };
            best = best.min(v);
            if v == 0.0 {
                // Bounds of 0 come in pool order: no earlier zero is left.
                first_zero = Some(i as usize);
                break;
            }
        }
        let picked = match first_zero {
            Some(z) => (Some(cands[z].s), cands[z].rank as u64 + 1),
            None => (cands.iter().rev().find(|c| c.exact && c.v == best).map(|c| c.s), scored as u64),
        };
        self.scan.candidates = cands;
        self.scan.bounded = heap.into_vec();
        picked
    }

    /// A region's compute, or a lower bound of it, and whether it is exact
    /// (not stale, no absorbs owed), from what is stored: a stale region's
    /// bound (see `mark_stale`); for one owed absorbs, its compute plus that
    /// of the storages it is owed (an absorb adds at least the absorbed
    /// storage's compute, as it is when applied: no evicted storage's
    /// compute changes while absorbs are owed, see `settle_owed`).
    #[inline(always)]
    pub(super) fn stored_bound(&self, s: u32, dir: Direction) -> (u64, bool) {
        let (si, d) = (s as usize, dir as usize);
        let lazy = &self.regions.lazy[si][d];
        if lazy.stale {
            return (lazy.bound, false);
        }
        let (owed, region) = match dir {
            Direction::Forward => (&self.regions.owed_fwd[si], &self.regions.fwd[si]),
            Direction::Reverse => (&self.regions.owed_rev[si], &self.regions.rev[si]),
        };
        if owed.is_empty() {
            (region.compute, true)
        } else {
            // Saturating: a bound still, should the list's sum pass 2^64.
            let owed = owed.iter().fold(0u64, |a, &(x, _)| a.saturating_add(self.compute[x as usize]));
            (region.compute.saturating_add(owed), false)
        }
    }

    /// Raise a stale region's bound to the compute of its direct evicted
    /// neighbours, which any walk reaches: once per mark.
    fn raise_bound(&mut self, s: u32, dir: Direction) {
        let (si, d) = (s as usize, dir as usize);
        let Lazy { stale, neighbours_at, marked, .. } = self.regions.lazy[si][d];
        if stale && neighbours_at != marked {
            let sum = self.evicted_neighbour_compute(s, dir);
            let lazy = &mut self.regions.lazy[si][d];
            lazy.neighbours_at = marked;
            if sum > lazy.bound {
                lazy.bound = sum;
                self.touch(s);
            }
        }
    }

    /// Make the region exact and return its compute, unless it exceeds
    /// `limit`: then `None`.
    ///
    /// A stale region is walked to the end, past the limit if need be: it
    /// is then exact until it is marked again, so that later scans know its
    /// key and later picks read it for free, where a walk stopped at the
    /// limit would leave it stale, to be walked again. (Walks stopped at
    /// the limit cost Inception-v4 at 0.20 of its peak 7 % more
    /// instructions, and none of 18 points of the eight traces tried was
    /// cheaper with them.)
    pub(super) fn exact_within(&mut self, s: u32, dir: Direction, limit: Option<i128>) -> Option<u64> {
        let si = s as usize;
        if limit.is_some_and(|k| k < 0) {
            return None;
        }
        self.touch(s);
        if self.regions.lazy[si][dir as usize].stale {
            self.rebuild(s, dir);
        } else {
            self.settle_region(s, dir);
        }
        let compute = match dir {
            Direction::Forward => self.regions.fwd[si].compute,
            Direction::Reverse => self.regions.rev[si].compute,
        };
        limit.is_none_or(|k| compute as i128 <= k).then_some(compute)
    }

    /// The largest cost term whose score is `<= best` for `s` (`None`: no
    /// bound — `best` is infinite or the score does not grow with the cost).
    pub(super) fn cost_limit(&self, size: bool, stale: bool, s: u32, best: f64) -> Option<i128> {
        if !best.is_finite() {
            return None;
        }
        let within = |k: i128| self.candidate_score(size, stale, s, k) <= best;
        const TOP: i128 = 1 << 100;
        if within(TOP) {
            return None;
        }
        if !within(0) {
            return Some(-1);
        }
        // Start from the rounded inverse, then gallop and bisect: `within` is
        // monotone in the cost, and exact, so the answer is exact.
        let si = s as usize;
        let mut denom = 1.0f64;
        if size {
            denom *= self.trace.storage_size(s) as f64;
        }
        if stale && self.last_access_int[si] != self.never_access {
            denom *= (self.clock as i64 - self.last_access_int[si]) as f64;
        }
        let guess = (best * denom).floor().clamp(0.0, TOP as f64) as i128;
        let (mut lo, mut hi) = if within(guess) { (guess, TOP) } else { (0, guess) };
        let mut step = 1i128;
        // Gallop from the guess towards the boundary.
        if lo == guess {
            while lo + step < hi && within(lo + step) {
                lo += step;
                step *= 2;
            }
            hi = hi.min(lo + step);
        } else {
            while hi - step > lo && !within(hi - step) {
                hi -= step;
                step *= 2;
            }
            lo = lo.max(hi - step);
        }
        // Invariant: within(lo), !within(hi).
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if within(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }

    /// Summed compute of the distinct evicted storages adjacent to `s` in
    /// `dir`: a lower bound of that region's compute.
    pub(super) fn evicted_neighbour_compute(&mut self, s: u32, dir: Direction) -> u64 {
        let g = GraphView { trace: self.trace, created: self.created, material: &self.material, compute: &self.compute, for_good: &self.for_good };
        let marks = &mut self.marks;
        marks.reset();
        let mut sum = 0u64;
        g.for_each_neighbour(s, dir, |n| {
            if !g.material[n as usize] && marks.insert(n) {
                sum += g.compute[n as usize];
            }
        });
        sum
    }

    #[inline]
    pub(super) fn candidate_score(&self, size: bool, stale: bool, s: u32, cost: i128) -> f64 {
        let si = s as usize;
        let staleness = if self.last_access_int[si] == self.never_access {
            None
        } else {
            Some((self.clock as i64 - self.last_access_int[si]) as u64)
        };
        score(size, stale, Candidate { cost, size: self.trace.storage_size(s), staleness })
    }

    /// The score of a heuristic whose cost term reads no region (those go
    /// through `choose_bounded`).
    pub(super) fn score(&mut self, h: Heuristic, s: u32) -> f64 {
        let si = s as usize;
        match h {
            Heuristic::Lru => {
                if self.last_access_int[si] == self.never_access {
                    f64::NEG_INFINITY
                } else {
                    self.last_access_int[si] as f64
                }
            }
            Heuristic::Random => unreachable!("random choice has no score"),
            Heuristic::Score { cost, size, stale } => {
                debug_assert!(!matches!(cost, Cost::Neighbourhood | Cost::Msps), "region scores go through choose_bounded");
                let classes = if cost == Cost::EqClass { self.eq_neighbour_sum(s) } else { 0 };
                let parts = CostParts { own: self.compute[si] as i128, classes, ..CostParts::default() };
                self.candidate_score(size, stale, s, cost.term(parts))
            }
        }
    }

    // ----- forensics of a decision (`RunConfig::explain`) -------------------

    /// Why `v` is the victim: its score and terms, and the runner-up's (the
    /// candidate the rule picks from the same pool without `v`). Counts no
    /// evaluation. Scoring exactly makes regions exact sooner than the
    /// replay would, which changes no result (the eager oracle does it at
    /// every choice).
    pub(super) fn decision(&mut self, v: u32) -> Decision {
        let h = self.cfg.heuristic;
        let candidates = self.pool.iter().filter(|&s| !self.retained[s as usize]).count() as u64;
        let runner_up = self.runner_up(h, v);
        Decision { victim: self.scored(h, v), runner_up: runner_up.map(|s| self.scored(h, s)), candidates }
    }

    /// The rule's choice over the pool without `v`: `v` is held back as a
    /// retained storage is for the length of the choice (no key, walk or
    /// region reads `retained`: only the candidates' enumeration does).
    fn runner_up(&mut self, h: Heuristic, v: u32) -> Option<u32> {
        let held = std::mem::replace(&mut self.retained[v as usize], true);
        let picked = match h {
            Heuristic::Random => None,
            Heuristic::Score { cost: cost @ (Cost::Neighbourhood | Cost::Msps), size, stale } => {
                self.choose_bounded(cost, size, stale).0
            }
            h => self.choose_plain(h).0,
        };
        self.retained[v as usize] = held;
        picked
    }

    /// The score of `s` under `h` with the exact terms it is made of.
    fn scored(&mut self, h: Heuristic, s: u32) -> Scored {
        let si = s as usize;
        let access = self.last_access_int[si];
        let staleness = (access != self.never_access).then(|| (self.clock as i64 - access) as u64);
        let mut d = Scored { storage: s, size: self.trace.storage_size(s), staleness, ..Scored::default() };
        match h {
            Heuristic::Random => {}
            Heuristic::Lru => d.score = Some(self.score(h, s)),
            Heuristic::Score { cost, size, stale } => {
                let mut parts = CostParts { own: self.compute[si] as i128, ..CostParts::default() };
                let region = |r: &mut Self, dir| r.exact_within(s, dir, None).expect("no limit") as i128;
                match cost {
                    Cost::Neighbourhood => {
                        parts.forward = region(self, Direction::Forward);
                        parts.reverse = region(self, Direction::Reverse);
                        (d.forward, d.reverse) = (Some(parts.forward), Some(parts.reverse));
                    }
                    Cost::Msps => {
                        parts.reverse = region(self, Direction::Reverse);
                        d.reverse = Some(parts.reverse);
                    }
                    Cost::EqClass => {
                        parts.classes = self.eq_neighbour_sum(s);
                        d.classes = Some(parts.classes);
                    }
                    Cost::Local | Cost::Unit => {}
                }
                if cost != Cost::Unit {
                    d.own = Some(parts.own);
                }
                let term = cost.term(parts);
                (d.cost, d.score) = (Some(term), Some(self.candidate_score(size, stale, s, term)));
            }
        }
        d
    }

    /// Sum of the values of the distinct classes of `s`'s evicted neighbours.
    pub(super) fn eq_neighbour_sum(&mut self, s: u32) -> i128 {
        // Distinct roots, on the stack while few (no allocation a candidate);
        // one walk, not `evicted_neighbours` and then the roots: deduplicating
        // the neighbours too cost a fifth more on LSTM 0.264 with AbEq.
        let (mut few, mut k, mut more) = ([0u32; 16], 0usize, Vec::new());
        let g = GraphView { trace: self.trace, created: self.created, material: &self.material, compute: &self.compute, for_good: &self.for_good };
        let (eq, eq_node) = (&mut self.eq, &self.eq_node);
        for dir in [Direction::Reverse, Direction::Forward] {
            g.for_each_neighbour(s, dir, |n| {
                if n == s || g.material[n as usize] {
                    return;
                }
                if let Some(node) = eq_node[n as usize] {
                    let r = eq.root(node);
                    if !few[..k].contains(&r) && !more.contains(&r) {
                        if k < few.len() {
                            few[k] = r;
                            k += 1;
                        } else {
                            more.push(r);
                        }
                    }
                }
            });
        }
        few[..k].iter().chain(&more).map(|&r| eq.value_of_root(r)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// A block passed over holds no key that passes the filter, over
    /// random keys with zeros, infinities and never-accessed storages.
    #[test]
    fn a_skipped_block_holds_no_key_that_passes_the_filter() {
        let mut rng = SplitMix64::new(3);
        let mut skipped = 0;
        for _ in 0..100_000 {
            let t = rng.below(2000) as f64;
            let keys: Vec<(f64, f64)> = (0..1 + rng.below(8))
                .map(|_| {
                    let r = match rng.below(10) {
                        0 => 0.0,
                        1 => f64::INFINITY,
                        _ => rng.below(1 << 20) as f64 / 1024.0,
                    };
                    let a = if rng.below(10) == 0 { f64::NEG_INFINITY } else { rng.below(t as u64 + 1) as f64 };
                    (r, a)
                })
                .collect();
            let best_hi = match rng.below(10) {
                0 => 0.0,
                1 => f64::INFINITY,
                _ => rng.below(1 << 16) as f64 / 65536.0,
            };
            let stale = rng.below(4) != 0;
            let r_min = keys.iter().map(|k| k.0).fold(f64::INFINITY, f64::min);
            let a_min = keys.iter().map(|k| k.1).fold(f64::INFINITY, f64::min);
            if skips(r_min, a_min, stale, t, best_hi) {
                skipped += 1;
                for &(r, a) in &keys {
                    let st = if stale { t - a } else { 1.0 };
                    assert!(!may_score_within(r, st, best_hi), "r {r} a {a} t {t} best_hi {best_hi}");
                }
            }
        }
        assert!(skipped > 10_000, "the test skips blocks: {skipped}");
    }

    /// A key's floor is at most the score it bounds, as the scan and the
    /// score compute them, over costs, sizes and staleness up to 2^50.
    #[test]
    fn a_key_floor_is_at_most_the_score() {
        let mut rng = SplitMix64::new(5);
        let wide = |rng: &mut SplitMix64| {
            let bits = rng.below(50);
            rng.below(1 << bits) + rng.below(2)
        };
        for _ in 0..200_000 {
            let (cost, m, st) = (wide(&mut rng), wide(&mut rng), wide(&mut rng));
            for (size, stale) in [(true, true), (true, false), (false, true), (false, false)] {
                let k = int_to_f64(cost as i128);
                let r = match (size, m) {
                    (false, _) => k,
                    (true, 0) => f64::INFINITY,
                    (true, m) => k / m as f64,
                };
                let floor = score_floor(r, if stale { st as f64 } else { 1.0 });
                let exact = score(size, stale, Candidate { cost: cost as i128, size: m, staleness: Some(st) });
                assert!(floor <= exact, "cost {cost} size {m} staleness {st} ({size}, {stale}): {floor} > {exact}");
            }
        }
    }
}
