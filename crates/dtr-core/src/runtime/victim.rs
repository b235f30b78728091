//! Victim choice: which pool member is evicted, as the reference decides it.
//!
//! **The rule** (the reference's `choose`): score every candidate (a pool
//! member not retained) in pool order; keep a candidate whose score is `<=`
//! the best so far; stop at the first score of 0. So the victim is the
//! first candidate scoring 0 if there is one, else the *last* candidate in
//! pool order among those of the least score (the tie rule), and the
//! reference counts as evaluated every candidate up to that zero, or all.
//! A score is the cost term (own compute plus the evicted neighbourhood's
//! region sums) over size and staleness, correctly rounded as Python's
//! `int / int` (`heuristic::score`).
//!
//! **The stages** (`choose_tree`), over the victim tree of score bounds
//! (`score_tree`) kept beside the pool:
//! 1. *the least score* `v`: a best-first search from the root, subtrees
//!    in the order of their bounds, reading a subtree only while its bound
//!    is below the least score found; a candidate whose cost is only
//!    bounded (a region not yet exact) is bounded from its direct
//!    neighbours first and made exact only if it still could be the least;
//! 2. *the victim*: with `v = 0`, the first candidate scoring 0 (a
//!    depth-first search from the left, counting the candidates it passes
//!    for the evaluation count); else the last candidate scoring `v` (from
//!    the right), passing over every subtree whose bound is above `v`.
//!
//! **Why it is the rule.** A subtree's bound is at most each of its
//! candidates' rounded scores (see `score_tree`). Stage 1 stops when every
//! subtree not read is bounded at `v` or more, so none holds a score below
//! `v`: `v` is the least. In stage 2 a subtree bounded above `v` holds no
//! candidate scoring `v`, and the search from the right (or the left, for
//! 0) meets the candidates it reads in reverse (or forward) pool order, so
//! the first it finds scoring `v` is the rule's. Without a zero the
//! reference evaluates every candidate: the root's count; with one, the
//! candidates before it, counted whole for every subtree passed over.
//!
//! **The oracle.** `choose_bounded` scores every candidate in pool order
//! as the reference does (bounded regions made exact where they could
//! win): the self-check compares its choice and count with the tree's at
//! every eviction; the golden records and the digests of every heuristic
//! over the public traces hold the replay to the reference.

use super::lazy_regions::Lazy;
use super::score_tree::{Place, Summary};
use super::Replay;
use crate::error::EngineError;
use crate::heuristic::{score, Candidate, Cost, CostParts, Heuristic};
use crate::pool::HOLE;
use crate::regions::{Direction, GraphView};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// A candidate's score bound and its index in pool order, ordered by bound
/// (`total_cmp`), then index: the order the exact scoring visits them in.
#[derive(Clone, Copy)]
pub(super) struct Bound(f64, u32);

impl PartialEq for Bound {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Bound {}

impl PartialOrd for Bound {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Bound {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// A victim candidate of the full scan (`choose_bounded`): its score, or a
/// lower bound of it, and its rank among the pool's candidates (pool order,
/// retained storages not counted).
#[derive(Clone, Copy)]
pub(super) struct Cand {
    s: u32,
    v: f64,
    exact: bool,
    rank: u32,
}

/// What the victim tree reads of a pool member, beside it in the pool
/// (`Pool` payload), renewed by `Replay::refresh_keys` for the storages
/// `Replay::touch` lists: `cost`, its cost term or a lower bound of it
/// (exact when `exact`: its regions are exact); `size`, its size; `a`, its
/// last internal access (the replay's `never_access` when never accessed);
/// and whether it is retained (never a candidate).
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
    fn known(&self, stale: bool, never: i64) -> bool {
        self.exact || (stale && self.a == never)
    }
}

/// A score and its place, ordered by score (`total_cmp`), then place: the
/// order stage 1 reads subtrees in (`refined`: a candidate already bounded
/// from its neighbours, to be made exact when reached again).
#[derive(Clone, Copy, PartialEq)]
pub(super) struct ByBound(f64, bool, Place);

impl Eq for ByBound {}

impl PartialOrd for ByBound {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByBound {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1)).then(self.2.cmp(&other.2))
    }
}

impl Replay<'_> {
    pub(super) fn choose(&mut self) -> Result<Option<u32>, EngineError> {
        match self.cfg.heuristic {
            Heuristic::Random => {
                self.heuristic_evals += 1;
                let candidates: Vec<u32> = self.pool.iter().filter(|&s| !self.retained[s as usize]).collect();
                if candidates.is_empty() {
                    return Ok(None);
                }
                let k = self.rng.below(candidates.len() as u64) as usize;
                Ok(Some(candidates[k]))
            }
            Heuristic::Score { cost: cost @ (Cost::Neighbourhood | Cost::Msps), size, stale } => {
                let (chosen, evals) = if !self.keyed {
                    self.choose_bounded(cost, size, stale)
                } else {
                    self.refresh_keys(cost);
                    if self.cfg.self_check {
                        self.check_keys(cost)?;
                    }
                    let picked = self.choose_tree(cost, size, stale)?;
                    if self.cfg.self_check {
                        let reference = self.choose_bounded(cost, size, stale);
                        if reference != picked {
                            return Err(EngineError::Invariant(format!(
                                "the key scan chose {picked:?} (victim, evaluations), the full scan {reference:?}"
                            )));
                        }
                    }
                    picked
                };
                self.heuristic_evals += evals;
                Ok(chosen)
            }
            h => {
                let mut best = f64::INFINITY;
                let mut best_s = None;
                let mut evals = 0;
                // Scoring never changes the pool (it may compress the
                // equivalence classes' paths).
                let mut i = 0;
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
                self.heuristic_evals += evals;
                Ok(best_s)
            }
        }
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
        if let Some(d) = self.key_dirty.get_mut(s as usize) {
            if !*d {
                *d = true;
                self.dirty_keys.push(s);
            }
        }
    }

    /// The key of `s` as it is now (see `Key`).
    #[inline(always)]
    fn fresh_key(&mut self, cost: Cost, s: u32) -> Key {
        let si = s as usize;
        // The stored bounds only: most keys are renewed and never read closely.
        let (term, _, _, exact) = self.bounded_term(cost, s, false);
        Key {
            // Region costs are sums of compute: never negative.
            cost: u128::try_from(term).expect("a region cost term is not negative"),
            size: self.trace.storage_size(s),
            a: self.last_access_int[si],
            exact,
            retained: self.retained[si],
        }
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
    pub(super) fn refresh_keys(&mut self, cost: Cost) {
        let mut dirty = std::mem::take(&mut self.dirty_keys);
        // A tree that no longer follows the slots is rebuilt by the search.
        let follows = self.tree.follows(self.pool.compactions());
        for &s in &dirty {
            self.key_dirty[s as usize] = false;
            // A storage outside the pool is touched again when it enters it.
            if self.pool.contains(s) {
                let key = self.fresh_key(cost, s);
                *self.pool.payload_mut(s) = key;
                if follows && !key.retained {
                    self.tree.renewed(self.pool.slot_of(s), &key);
                }
            }
        }
        dirty.clear();
        self.dirty_keys = dirty;
    }

    /// The self-check of the keys: every pool member's equals a fresh one,
    /// and the tree over them holds.
    fn check_keys(&mut self, cost: Cost) -> Result<(), EngineError> {
        let members: Vec<u32> = self.pool.iter().collect();
        for s in members {
            let (kept, fresh) = (*self.pool.payload_mut(s), self.fresh_key(cost, s));
            if kept != fresh {
                return Err(EngineError::Invariant(format!("storage {s}: its victim-tree key is out of date")));
            }
        }
        if self.tree.follows(self.pool.compactions()) {
            self.tree.check(self.pool.slots(), self.pool.payload()).map_err(EngineError::Invariant)?;
        }
        Ok(())
    }

    /// The victim and the reference's evaluation count, from the victim
    /// tree (keys renewed by `refresh_keys` before): the stages of this
    /// file's doc.
    pub(super) fn choose_tree(&mut self, cost: Cost, size: bool, stale: bool) -> Result<(Option<u32>, u64), EngineError> {
        if !self.tree.follows(self.pool.compactions()) {
            self.tree.rebuild(self.pool.slots(), self.pool.payload(), self.pool.compactions());
        }
        let Some(root) = self.tree.root() else { return Ok((None, 0)) };
        let live = self.tree.tighten(root, self.pool.slots(), self.pool.payload()).live;
        if live == 0 {
            return Ok((None, 0));
        }
        let v = self.least_score(cost, size, stale, root);
        let found = if v == 0.0 {
            self.first_scoring_zero(cost, size, stale, root).map(|(s, rank)| (Some(s), rank as u64 + 1))
        } else {
            self.last_scoring(cost, size, stale, root, v).map(|s| (Some(s), live as u64))
        };
        found.ok_or_else(|| EngineError::Invariant(format!("the victim tree found no candidate scoring its least score {v}")))
    }

    /// The bound of place `p` at the clock now: a slot's from its key (its
    /// score where the key is known), a node's from its summary.
    #[inline]
    fn bound_at(&self, p: Place, size: bool, stale: bool) -> f64 {
        let s = if p.level == 0 {
            let i = p.index as usize;
            Summary::of(self.pool.slots()[i], &self.pool.payload()[i], size)
        } else {
            self.tree.node(p)
        };
        s.bound(size, stale, self.clock, self.never_access)
    }

    /// Stage 1: the least score among the candidates (+inf where every one
    /// scores +inf).
    fn least_score(&mut self, cost: Cost, size: bool, stale: bool, root: Place) -> f64 {
        let mut heap = std::mem::take(&mut self.by_bound);
        heap.clear();
        heap.push(Reverse(ByBound(self.bound_at(root, size, stale), false, root)));
        let mut v = f64::INFINITY;
        while let Some(Reverse(ByBound(b, refined, p))) = heap.pop() {
            // (Scores and bounds are never NaN: a 0/0 scores +inf.)
            if b >= v {
                break;
            }
            if p.level == 0 {
                let i = p.index as usize;
                let (s, key) = (self.pool.slots()[i], self.pool.payload()[i]);
                if key.known(stale, self.never_access) {
                    v = v.min(b);
                } else if refined {
                    if let Some(x) = self.exact_score_within(cost, size, stale, s, v) {
                        v = v.min(x);
                    }
                } else {
                    // Bounded from its neighbours first (cheap), and back in
                    // the heap at that bound; made exact only if reached again.
                    let c = self.candidate(cost, size, stale, s, 0);
                    if c.exact {
                        v = v.min(c.v);
                    } else if c.v < v {
                        heap.push(Reverse(ByBound(c.v, true, p)));
                    }
                }
                continue;
            }
            let node = self.tree.tighten(p, self.pool.slots(), self.pool.payload());
            if node.bound(size, stale, self.clock, self.never_access) >= v {
                continue;
            }
            for index in self.tree.children(p, self.pool.slots().len()) {
                let child = Place { level: p.level - 1, index };
                let cb = self.bound_at(child, size, stale);
                if cb < v {
                    heap.push(Reverse(ByBound(cb, false, child)));
                }
            }
        }
        self.by_bound = heap;
        v
    }

    /// Stage 2 with a least score of 0: the first candidate in pool order
    /// scoring 0, and how many candidates come before it.
    fn first_scoring_zero(&mut self, cost: Cost, size: bool, stale: bool, root: Place) -> Option<(u32, u32)> {
        let mut stack = std::mem::take(&mut self.dfs);
        stack.clear();
        stack.push(root);
        let mut rank = 0u32;
        let mut found = None;
        while let Some(p) = stack.pop() {
            if p.level == 0 {
                let i = p.index as usize;
                let (s, key) = (self.pool.slots()[i], self.pool.payload()[i]);
                if s == HOLE || key.retained {
                    continue;
                }
                if self.score_within(cost, size, stale, p, 0.0) == Some(0.0) {
                    found = Some((s, rank));
                    break;
                }
                rank += 1;
                continue;
            }
            let node = self.tree.tighten(p, self.pool.slots(), self.pool.payload());
            if node.live == 0 {
                continue;
            }
            if node.bound(size, stale, self.clock, self.never_access) > 0.0 {
                rank += node.live;
                continue;
            }
            // Leftmost on top: pool order.
            stack.extend(self.tree.children(p, self.pool.slots().len()).rev().map(|index| Place { level: p.level - 1, index }));
        }
        self.dfs = stack;
        found
    }

    /// Stage 2 with a least score `v` above 0: the last candidate in pool
    /// order scoring `v`.
    fn last_scoring(&mut self, cost: Cost, size: bool, stale: bool, root: Place, v: f64) -> Option<u32> {
        let mut stack = std::mem::take(&mut self.dfs);
        stack.clear();
        stack.push(root);
        let mut found = None;
        while let Some(p) = stack.pop() {
            if p.level == 0 {
                let i = p.index as usize;
                let (s, key) = (self.pool.slots()[i], self.pool.payload()[i]);
                if s == HOLE || key.retained {
                    continue;
                }
                if let Some(x) = self.score_within(cost, size, stale, p, v) {
                    debug_assert!(x == v, "stage 1 missed a score {x} below {v}");
                    found = Some(s);
                    break;
                }
                continue;
            }
            let node = self.tree.tighten(p, self.pool.slots(), self.pool.payload());
            if node.live == 0 || node.bound(size, stale, self.clock, self.never_access) > v {
                continue;
            }
            // Rightmost on top: reverse pool order.
            stack.extend(self.tree.children(p, self.pool.slots().len()).map(|index| Place { level: p.level - 1, index }));
        }
        self.dfs = stack;
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
        let (s, key) = (self.pool.slots()[i], self.pool.payload()[i]);
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
        let (term, _, _, exact) = self.bounded_term(cost, s, true);
        let v = self.candidate_score(size, stale, s, term);
        // A never-accessed storage's staleness is infinite: its score is
        // exact whatever its cost (0, or +inf for size 0).
        let exact = exact || (stale && self.last_access_int[s as usize] == self.never_access);
        Cand { s, v, exact, rank }
    }

    /// The reference's scan for region scores over every pool member, each
    /// scored from its bounds (the reference's order of work when every
    /// region is exact, with eager regions; and the oracle of `choose_tree`
    /// in the self-check).
    pub(super) fn choose_bounded(&mut self, cost: Cost, size: bool, stale: bool) -> (Option<u32>, u64) {
        let mut cands = std::mem::take(&mut self.candidates);
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
    /// shows that it cannot win, its reverse region is not read.
    fn pick(&mut self, mut cands: Vec<Cand>, cost: Cost, size: bool, stale: bool, scored: u32) -> (Option<u32>, u64) {
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
        let mut bounded = std::mem::take(&mut self.bounded);
        bounded.clear();
        bounded.extend(
            (0..end as u32)
                .filter(|&i| !cands[i as usize].exact && cands[i as usize].v <= best)
                .map(|i| Reverse(Bound(cands[i as usize].v, i))),
        );
        let mut heap = BinaryHeap::from(bounded);
        while let Some(Reverse(Bound(_, i))) = heap.pop() {
            let Cand { s, v: bound, rank, .. } = cands[i as usize];
            if bound > best {
                break;
            }
            let Some(v) = self.exact_score_within(cost, size, stale, s, best) else {
                continue; // cannot win
            };
            cands[i as usize] = Cand { s, v, exact: true, rank };
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
        self.candidates = cands;
        self.bounded = heap.into_vec();
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
        let lazy = &self.lazy[si][d];
        if lazy.stale {
            return (lazy.bound, false);
        }
        let (owed, region) = match dir {
            Direction::Forward => (&self.owed_fwd[si], &self.fwd[si]),
            Direction::Reverse => (&self.owed_rev[si], &self.rev[si]),
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
        let Lazy { stale, neighbours_at, marked, .. } = self.lazy[si][d];
        if stale && neighbours_at != marked {
            let sum = self.evicted_neighbour_compute(s, dir);
            let lazy = &mut self.lazy[si][d];
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
        if self.lazy[si][dir as usize].stale {
            self.rebuild(s, dir);
        } else {
            self.settle_region(s, dir);
        }
        let compute = match dir {
            Direction::Forward => self.fwd[si].compute,
            Direction::Reverse => self.rev[si].compute,
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
