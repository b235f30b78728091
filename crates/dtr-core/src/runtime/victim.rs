//! Victim choice: the reference's pool scan, reproduced without reading
//! every region (bounds, early-stopping rebuilds), and the scores.

use super::Replay;
use crate::heuristic::{score, Candidate, Cost, CostParts, Heuristic};
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

/// A victim candidate: its score, or a lower bound of it with the bounds of
/// its two region sums.
#[derive(Clone, Copy)]
pub(super) struct Cand {
    s: u32,
    v: f64,
    exact: bool,
    fwd: u64,
    rev: u64,
}

impl Replay<'_> {
    pub(super) fn choose(&mut self) -> Option<u32> {
        match self.cfg.heuristic {
            Heuristic::Random => {
                self.heuristic_evals += 1;
                let candidates: Vec<u32> = self.pool.iter().filter(|&s| !self.retained[s as usize]).collect();
                if candidates.is_empty() {
                    return None;
                }
                let k = self.rng.below(candidates.len() as u64) as usize;
                Some(candidates[k])
            }
            Heuristic::Score { cost: cost @ (Cost::Neighbourhood | Cost::Msps), size, stale } => {
                self.choose_bounded(cost, size, stale)
            }
            h => {
                let mut best = f64::INFINITY;
                let mut best_s = None;
                let mut evals = 0;
                // Scoring never changes the pool.
                let mut next = self.pool.first();
                while let Some(s) = next {
                    next = self.pool.next_of(s);
                    if self.retained[s as usize] {
                        continue;
                    }
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
                best_s
            }
        }
    }

    /// The reference's scan for region scores, without reading every region.
    ///
    /// The reference keeps a candidate whose score is `<=` the best so far
    /// and stops at the first score 0: it picks the first zero in pool
    /// order, else the last candidate with the minimal score, and scores the
    /// candidates up to that zero (or all). A region that is not exact is
    /// bounded below: a stale one by its direct evicted neighbours (any walk
    /// reaches them), one owed absorbs by its current compute (absorbs only
    /// add). A score rises with its cost term, so a candidate whose bound
    /// exceeds an exact score cannot be picked; and a rebuild stops as soon
    /// as its partial sum shows the candidate cannot win.
    pub(super) fn choose_bounded(&mut self, cost: Cost, size: bool, stale: bool) -> Option<u32> {
        let mut cands = std::mem::take(&mut self.candidates);
        cands.clear();
        let both = cost == Cost::Neighbourhood;
        let mut best = f64::INFINITY;
        let mut first_zero = None;
        let mut next = self.pool.first();
        while let Some(s) = next {
            next = self.pool.next_of(s);
            let si = s as usize;
            if self.retained[si] {
                continue;
            }
            let fwd = if both { self.region_bound(s, Direction::Forward) } else { Some(0) };
            let rev = self.region_bound(s, Direction::Reverse);
            let exact = fwd.is_some() && rev.is_some();
            let (fwd, rev) = (fwd.unwrap_or_else(|| self.lower_bound(s, Direction::Forward)),
                              rev.unwrap_or_else(|| self.lower_bound(s, Direction::Reverse)));
            let parts = CostParts { own: self.compute[si] as i128, forward: fwd as i128, reverse: rev as i128, classes: 0 };
            let v = self.candidate_score(size, stale, s, cost.term(parts));
            cands.push(Cand { s, v, exact, fwd, rev });
            if exact {
                best = best.min(v);
                if v == 0.0 {
                    first_zero = Some(cands.len() - 1);
                    break;
                }
            }
        }
        // Score exactly, lowest bound first (ties in pool order), what could
        // still be picked: a heap, since the scan usually stops after a few.
        let mut bounded = std::mem::take(&mut self.bounded);
        bounded.clear();
        bounded.extend(
            (0..cands.len() as u32)
                .filter(|&i| !cands[i as usize].exact && cands[i as usize].v <= best)
                .map(|i| Reverse(Bound(cands[i as usize].v, i))),
        );
        let mut heap = BinaryHeap::from(bounded);
        while let Some(Reverse(Bound(_, i))) = heap.pop() {
            let Cand { s, v: bound, fwd, rev, .. } = cands[i as usize];
            if bound > best {
                break;
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
            cands[i as usize] = Cand { s, v, exact: true, fwd: 0, rev: 0 };
            best = best.min(v);
            if v == 0.0 {
                // Bounds of 0 come in pool order: no earlier zero is left.
                first_zero = Some(i as usize);
                break;
            }
        }
        let chosen = match first_zero {
            Some(z) => {
                self.heuristic_evals += z as u64 + 1;
                Some(cands[z].s)
            }
            None => {
                self.heuristic_evals += cands.len() as u64;
                cands.iter().rev().find(|c| c.exact && c.v == best).map(|c| c.s)
            }
        };
        self.candidates = cands;
        self.bounded = heap.into_vec();
        chosen
    }

    /// A region's compute if it is exact now (not stale, no absorbs owed).
    #[inline]
    pub(super) fn region_bound(&self, s: u32, dir: Direction) -> Option<u64> {
        let si = s as usize;
        let (stale, owed, region) = match dir {
            Direction::Forward => (self.stale[si][0], &self.owed_fwd[si], &self.fwd[si]),
            Direction::Reverse => (self.stale[si][1], &self.owed_rev[si], &self.rev[si]),
        };
        (!stale && owed.is_empty()).then_some(region.compute)
    }

    /// A lower bound of a region's compute that is not exact now.
    pub(super) fn lower_bound(&mut self, s: u32, dir: Direction) -> u64 {
        let si = s as usize;
        match dir {
            Direction::Forward if !self.stale[si][0] => self.fwd[si].compute,
            Direction::Reverse if !self.stale[si][1] => self.rev[si].compute,
            _ => {
                let d = dir as usize;
                let (when, sum) = self.partial[si][d];
                if when == self.marked[si][d] {
                    sum
                } else {
                    // A lower bound until the region is marked again, like a
                    // partial sum (see `partial`): keep it as one.
                    let sum = self.evicted_neighbour_compute(s, dir);
                    self.partial[si][d] = (self.marked[si][d], sum);
                    sum
                }
            }
        }
    }

    /// Make the region exact and return its compute, unless it exceeds
    /// `limit`: then `None`, and a stale region stays stale.
    pub(super) fn exact_within(&mut self, s: u32, dir: Direction, limit: Option<i128>) -> Option<u64> {
        let si = s as usize;
        if limit.is_some_and(|k| k < 0) {
            return None;
        }
        let d = dir as usize;
        if self.stale[si][d] {
            let limit = limit.map_or(u64::MAX, |k| u64::try_from(k).unwrap_or(u64::MAX));
            let g = GraphView { trace: self.trace, created: self.created, material: &self.material, compute: &self.compute };
            let region = match dir {
                Direction::Forward => &mut self.fwd[si],
                Direction::Reverse => &mut self.rev[si],
            };
            if !region.rebuild_within(s, dir, &g, &mut self.marks, &mut self.walk, limit) {
                self.partial[si][d] = (self.marked[si][d], region.compute);
                return None;
            }
            region.sums_at = self.compute_changes;
            self.stale[si][d] = false;
            match dir {
                Direction::Forward => self.owed_fwd[si].clear(),
                Direction::Reverse => self.owed_rev[si].clear(),
            }
        } else {
            self.settle_regions(s);
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
        let g = GraphView { trace: self.trace, created: self.created, material: &self.material, compute: &self.compute };
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
    pub(super) fn score(&self, h: Heuristic, s: u32) -> f64 {
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
    pub(super) fn eq_neighbour_sum(&self, s: u32) -> i128 {
        let mut neighbours = Vec::new();
        self.evicted_neighbours(s, &mut neighbours);
        let mut roots: Vec<u32> = Vec::with_capacity(neighbours.len());
        for n in neighbours {
            if let Some(node) = self.eq_node[n as usize] {
                let r = self.eq.find(node);
                if !roots.contains(&r) {
                    roots.push(r);
                }
            }
        }
        roots.iter().map(|&r| self.eq.value_of_root(r)).sum()
    }
}
