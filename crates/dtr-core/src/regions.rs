//! Evicted neighbourhoods e*(s): for each resident storage, the evicted
//! storages reachable through evicted storages only, in the forward (children)
//! and reverse (parents) direction, with the summed compute of that interior.
//!
//! Maintained incrementally exactly as the reference does: a storage's
//! regions are rebuilt when it (re)materializes, absorbed into its frontier's
//! regions when it is evicted. Sets are plain vectors; membership during a
//! walk is tested with generation-stamped marks (no hashing).

use crate::trace::{StorageLinks, TensorId, Trace};
use rustc_hash::FxHashSet;
use std::rc::Rc;
use std::collections::VecDeque;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
}

impl Direction {
    /// The trace's storage links this way (children forward, parents in reverse).
    #[inline]
    pub fn links(self, trace: &Trace) -> &StorageLinks {
        match self {
            Direction::Forward => &trace.storage_fwd,
            Direction::Reverse => &trace.storage_rev,
        }
    }
}

/// `frontier` less `s`, then each storage of `theirs` not in it yet: the
/// frontier an absorb of `s` (whose region's frontier is `theirs`) leaves.
fn merge_frontier(frontier: &mut Vec<u32>, s: u32, theirs: &[u32], marks: &mut Marks) {
    if let Some(i) = frontier.iter().position(|&x| x == s) {
        frontier.swap_remove(i);
    }
    marks.reset();
    for &x in frontier.iter() {
        marks.insert(x);
    }
    for &x in theirs {
        if marks.insert(x) {
            frontier.push(x);
        }
    }
}

/// The interior half of an absorb of evicted `s`: `s` itself always counts
/// in `sum` (as in the reference), then each storage of `s_region`'s
/// interior not `held` yet joins `interior` and `sum`, unless its roots
/// show it held whole (`Region::covers`; true then), then `s` joins.
fn add_interior(interior: &mut VecDeque<u32>, sum: &mut u64, s: u32, s_region: &Region, compute: &[u64], held: &mut impl Held) -> bool {
    *sum += compute[s as usize];
    let covered = Region::covers(s_region, held);
    if !covered {
        for &x in &s_region.interior {
            if x != s && held.hold(x) {
                interior.push_back(x);
                *sum += compute[x as usize];
            }
        }
    }
    if held.hold(s) {
        interior.push_back(s);
    }
    covered
}

/// The storages (interior and frontier) from which a stale region lets
/// its buffers go (`Region::forget`).
const FORGET_FROM: usize = 1024;

/// Passes of marks over a region, each finding the absorbed interiors held
/// already, after which hash sets of it may be built (see `Region::absorb`).
const SETS_AFTER: u32 = 4;

/// Set elements are unique; their order carries no meaning.
#[derive(Debug, Clone, Default)]
pub struct Region {
    /// In walk order after a rebuild (the base's first neighbour first).
    pub interior: VecDeque<u32>,
    pub frontier: Vec<u32>,
    pub compute: u64,
    /// `GraphView::created` when the region was last rebuilt: while it is
    /// unchanged no link was added and no storage's compute changed, so
    /// `compute` is the sum of its interior's compute as it is now.
    pub created: TensorId,
    /// The runtime's count of compute changes to evicted storages when the
    /// sums were taken (set by the runtime after a rebuild): while it is
    /// unchanged, `compute` is its interior's compute as it is now.
    pub sums_at: u64,
    /// Hash sets of `interior` and `frontier`, built by an absorb of a
    /// region much smaller than this one and kept up to date by later
    /// absorbs, so that a region absorbing one storage at a time stops
    /// rescanning itself (see `absorb`).
    members: Option<Box<Members>>,
    /// Set on the region of a storage as it is evicted, where regions are
    /// walks of the graph as it is then (outside a stretch, see
    /// `Replay::ensure_exact`): the storage's evicted neighbours this way,
    /// whose reach through evicted storages is the interior. A region that
    /// holds them all holds the whole interior (see `covers`).
    pub roots: Option<Box<[u32]>>,
    /// Passes of marks over this region by absorbs in a row that found
    /// every absorbed interior held already (see `absorb`).
    passes: u32,
}

#[derive(Debug, Clone, Default)]
struct Members {
    interior: FxHashSet<u32>,
    frontier: FxHashSet<u32>,
}

/// A set of storages an absorb adds to: generation marks or a hash set.
trait Held {
    fn holds(&self, x: u32) -> bool;
    /// Insert `x`; true if it was not held yet.
    fn hold(&mut self, x: u32) -> bool;
}

impl Held for Marks {
    fn holds(&self, x: u32) -> bool {
        self.contains(x)
    }
    fn hold(&mut self, x: u32) -> bool {
        self.insert(x)
    }
}

impl Held for FxHashSet<u32> {
    fn holds(&self, x: u32) -> bool {
        self.contains(&x)
    }
    fn hold(&mut self, x: u32) -> bool {
        self.insert(x)
    }
}

/// Per-storage generation stamps: `mark(x)` is true once per generation.
#[derive(Debug, Clone)]
pub struct Marks {
    stamp: Vec<u32>,
    generation: u32,
}

impl Marks {
    pub fn new(n: usize) -> Self {
        Marks { stamp: vec![0; n], generation: 0 }
    }

    /// Start a new, empty set.
    pub fn reset(&mut self) {
        if self.generation == u32::MAX {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.generation = 0;
        }
        self.generation += 1;
    }

    /// Insert `x`; true if it was not yet in the set.
    #[inline]
    pub fn insert(&mut self, x: u32) -> bool {
        debug_assert!((x as usize) < self.stamp.len());
        // SAFETY: every storage id is below the trace's tensor count, the length.
        let s = unsafe { self.stamp.get_unchecked_mut(x as usize) };
        if *s == self.generation {
            false
        } else {
            *s = self.generation;
            true
        }
    }

    #[inline]
    pub fn contains(&self, x: u32) -> bool {
        self.stamp[x as usize] == self.generation
    }

    /// Remove `x`; true if it was in the set.
    #[inline]
    pub fn remove(&mut self, x: u32) -> bool {
        let s = &mut self.stamp[x as usize];
        // Generations start at 1: a stamp of 0 is in no set.
        std::mem::replace(s, 0) == self.generation
    }
}

/// A walk's buffers, kept between walks: a region's own buffers often start
/// empty (they move with take-overs and evictions), and growing them a push
/// at a time cost a tenth of a thrashing replay in reallocations; the walk
/// fills these, and the region copies the result in one allocation.
#[derive(Debug, Clone, Default)]
pub struct Walk {
    interior: Vec<u32>,
    frontier: Vec<u32>,
}

impl Walk {
    /// Empty the buffers and the marks for a walk from `base` (marked) in
    /// `dir`, with room for every storage; the links it follows.
    fn start<'g>(&mut self, base: u32, dir: Direction, g: &GraphView<'g>, marks: &mut Marks) -> &'g StorageLinks {
        self.interior.clear();
        self.frontier.clear();
        marks.reset();
        marks.insert(base);
        let links = dir.links(g.trace);
        // Checked once here: every other storage walked is a link's target.
        let n = links.storages();
        assert!((base as usize) < n && n <= g.material.len() && n <= g.compute.len() && n <= g.for_good.len());
        // Each storage is pushed once at most (the marks): room for all of
        // them up front (kept between walks), and no check a push.
        self.interior.reserve(n);
        self.frontier.reserve(n);
        links
    }

    /// Add `x` (marked) to the interior (evicted) or the frontier.
    #[inline(always)]
    fn push(&mut self, x: u32, evicted: bool) {
        let v = if evicted { &mut self.interior } else { &mut self.frontier };
        debug_assert!(v.len() < v.capacity());
        // SAFETY: `start` made room for every storage, each pushed once.
        unsafe {
            v.as_mut_ptr().add(v.len()).write(x);
            v.set_len(v.len() + 1);
        }
    }

    /// Walk breadth first from `s`, then from each storage of the interior
    /// from `next` on (the interior found so far is the queue: a region is
    /// a set, its order not observable, and no stack is kept), adding what
    /// is not marked yet; `compute` is the interior's sum so far, and the
    /// sum is returned (compute sums fit in u64: the parser bounds the
    /// total). `s` must be a storage of `links` (checked by the caller:
    /// `start` checks the base), and `start` must have made room.
    #[inline(always)]
    fn explore(&mut self, mut s: u32, mut next: usize, mut compute: u64, links: &StorageLinks, g: &GraphView, marks: &mut Marks) -> u64 {
        loop {
            // SAFETY: `s` is checked by the caller or is a link's target (see `get_unchecked`).
            let out = unsafe { links.get_unchecked(s) };
            for &(activation, us) in out {
                if activation >= g.created {
                    break;
                }
                if marks.insert(us) {
                    // SAFETY: a link's target indexes per-storage arrays (checked by `start`).
                    if unsafe { *g.material.get_unchecked(us as usize) } {
                        if !unsafe { *g.for_good.get_unchecked(us as usize) } {
                            self.push(us, false);
                        }
                    } else {
                        self.push(us, true);
                        compute += unsafe { *g.compute.get_unchecked(us as usize) };
                    }
                }
            }
            let Some(&n) = self.interior.get(next) else { return compute };
            next += 1;
            s = n;
        }
    }

    /// Copy what the walk found into `region` (one allocation each).
    fn copy_into(&self, region: &mut Region) {
        region.interior.extend(self.interior.iter().copied());
        region.frontier.extend_from_slice(&self.frontier);
    }
}

/// What a region walk reads from the runtime.
pub struct GraphView<'a> {
    pub trace: &'a Trace,
    /// Tensors with ids below this have been created.
    pub created: TensorId,
    pub material: &'a [bool],
    pub compute: &'a [u64],
    /// Storages resident for good wherever a link reaches them: a walk
    /// leaves them off the frontier.
    ///
    /// Why nothing misses them. A pinned storage is resident when pinned
    /// and never evicted after (neither chosen nor released); a retained
    /// one is never evicted, and a link to it exists only once it is
    /// created. So such a storage never becomes interior, and every reader
    /// of a frontier skips it: its regions are never read
    /// (`regions_unused`), so it is neither marked stale after a
    /// rematerialization nor owed an absorb after an eviction; a region
    /// taken over unwalked (`take_region_ahead`) needs only its frontier
    /// still resident, which it is. Half the frontier entries of a
    /// thrashing replay were such storages (Inception-v4 at 0.20 of its
    /// peak), each copied, merged on absorbs and skipped one by one.
    pub for_good: &'a [bool],
}

impl GraphView<'_> {
    /// Call `f` on every storage adjacent to `s` in direction `dir` (through
    /// created tensors; a view's link to its own storage is not a neighbour).
    #[inline]
    pub fn for_each_neighbour(&self, s: u32, dir: Direction, mut f: impl FnMut(u32)) {
        for &(activation, n) in dir.links(self.trace).get(s) {
            if activation >= self.created {
                break;
            }
            f(n);
        }
    }
}

impl Region {
    pub fn clear(&mut self) {
        self.interior.clear();
        self.frontier.clear();
        self.compute = 0;
        self.members = None;
        self.roots = None;
        self.passes = 0;
    }

    /// Whether this region's interior holds all of `s_region`'s, read from
    /// its roots alone (false where it has none, unless its interior is
    /// empty): `held` is this interior.
    ///
    /// Why the roots suffice. Both regions are walks of the same graph (an
    /// absorb owed to this region is applied to it as it was at the
    /// eviction, which was a walk then: stale regions are owed none, and
    /// roots are set only outside a stretch). A walk's interior is closed:
    /// with an evicted storage it holds every evicted storage reachable
    /// from it through evicted ones. `s_region`'s interior is exactly what
    /// its roots reach so (the evicted storage itself was resident: the
    /// walks stop there, and the graph is acyclic), so if this interior
    /// holds the roots it holds all of it. A backward pass over a long
    /// released stretch absorbs such regions at every eviction (two
    /// recurrent chains: the hidden state's region inside the cell's), and
    /// reading them all made the replay quadratic in the depth.
    #[inline]
    fn covers(s_region: &Region, held: &impl Held) -> bool {
        s_region.interior.is_empty() || s_region.roots.as_ref().is_some_and(|r| r.iter().all(|&x| held.holds(x)))
    }

    /// Let go of a large interior and frontier, and of their memory: a
    /// stale region is rebuilt before they are read again. (Small ones keep
    /// their buffers for that rebuild: a thrashing replay marks and
    /// rebuilds the same regions again and again.) Without this, the stale
    /// regions of a replay could hold a storage list each as long as the
    /// graph: memory quadratic in its depth (a chain whose steps read the
    /// two before them, 30,000 deep: 1.8 GB; 100,000: past 15 GB).
    pub fn forget(&mut self) {
        if self.interior.capacity() + self.frontier.capacity() > FORGET_FROM {
            self.interior = VecDeque::new();
            self.frontier = Vec::new();
            self.members = None;
        }
    }

    /// Recompute from scratch for resident `base`.
    pub fn rebuild(&mut self, base: u32, dir: Direction, g: &GraphView, marks: &mut Marks, walk: &mut Walk) {
        self.clear();
        self.created = g.created;
        let links = walk.start(base, dir, g, marks);
        self.compute = walk.explore(base, 0, 0, links, g, marks);
        walk.copy_into(self);
    }

    /// Recompute from scratch for resident `base` (as `rebuild`), and
    /// return the region `via` will have once it is resident too, where
    /// `via` is an evicted neighbour of `base` in `dir`, for nothing more
    /// than the walk costs.
    ///
    /// Why it is one walk. Everything evicted reachable from `via` is
    /// reachable from `base` through `via`; so the walk first finds `via`'s
    /// region (which cannot reach back to `base`: the graph is acyclic),
    /// then goes on from `base` past what it found, and `base`'s region is
    /// `via`, `via`'s region, and what the rest of the walk adds, with the
    /// frontier of both (each storage once: the marks are shared).
    pub fn rebuild_via(&mut self, base: u32, via: u32, dir: Direction, g: &GraphView, marks: &mut Marks, walk: &mut Walk) -> Region {
        self.clear();
        self.created = g.created;
        let links = walk.start(base, dir, g, marks);
        assert!((via as usize) < links.storages() && !g.material[via as usize] && via != base);
        marks.insert(via);
        let via_compute = walk.explore(via, 0, 0, links, g, marks);
        let mut ahead = Region { created: g.created, compute: via_compute, ..Region::default() };
        walk.copy_into(&mut ahead);
        // `via` itself, then the rest from `base` (the walk goes on from the
        // storages it adds after `via`: those before are explored).
        let next = walk.interior.len() + 1;
        walk.push(via, true);
        self.compute = walk.explore(base, next, via_compute + g.compute[via as usize], links, g, marks);
        walk.copy_into(self);
        ahead
    }

    /// This region, of a base whose only evicted neighbour is `front` (at
    /// `at` in its interior; first after a rebuild), as the region of
    /// `front` once `front` is resident: the base reaches nothing evicted
    /// but through `front`, and the graph is acyclic, so a walk from `front`
    /// finds the same interior (the caller leaves on the frontier only what
    /// that walk reaches). Its compute must be current (see `created`).
    pub fn into_region_of_front(mut self, at: usize, front_compute: u64) -> Region {
        self.interior.remove(at);
        self.compute = self.compute.checked_sub(front_compute).expect("a region's compute counts its interior");
        self.members = None;
        self.roots = None;
        self
    }

    /// `absorb`, when this region's interior is empty and `s` is on its
    /// frontier: `s_region` is taken over without copying its interior,
    /// which is then `s_region`'s and `s` (a region never holds its own
    /// base, so `s` is not in `s_region`; nor does `s_region` reach back to
    /// this base); the frontier is merged as `absorb` merges it. The same
    /// interior in the same order, compute and frontier as `absorb` (which
    /// adds every storage of `s_region`'s interior: none is in this empty
    /// one), in time of the frontiers, not of the interior: a region taking
    /// over a long evicted stretch again and again (a backward pass over
    /// released activations) stays linear. `s_region`'s compute must be
    /// current; its hash sets, if built, are kept.
    pub fn take_over(&mut self, s: u32, s_region: Region, s_compute: u64, marks: &mut Marks) {
        debug_assert!(self.interior.is_empty() && self.frontier.contains(&s));
        let created = self.created.min(s_region.created);
        let own = self.compute;
        let mut frontier = std::mem::take(&mut self.frontier);
        merge_frontier(&mut frontier, s, &s_region.frontier, marks);
        *self = s_region; // keeps its `sums_at` and its hash sets
        self.roots = None; // a resident storage's region now
        self.interior.push_back(s);
        // As `absorb` sums: this region's, `s` itself, then `s_region`'s interior.
        self.compute = own
            .checked_add(s_compute)
            .and_then(|c| c.checked_add(self.compute))
            .expect("compute sums fit in u64 (the parser bounds the total)");
        if let Some(m) = self.members.as_mut() {
            m.interior.insert(s);
            m.frontier.clear();
            m.frontier.extend(frontier.iter().copied());
        }
        self.frontier = frontier;
        self.created = created;
    }

    /// Absorb the just-evicted frontier storage `s`, whose same-direction
    /// region (as it was while resident) is `s_region`.
    ///
    /// Marks cost a pass over this region and one over `s_region`; hash
    /// sets cost a pass over this region to build them, then a few times a
    /// pass over `s_region` at each absorb. So marks, unless the sets are
    /// built already or this region is much the larger (a chain absorbing
    /// one storage at a time); both give the same result in the same order.
    /// (Inception-v4 at 0.20 of its peak built sets for regions of a few
    /// hundred storages that absorbed once or twice more: marks there save
    /// 2 % of the replay's instructions.)
    ///
    /// Reading `s_region`'s roots instead of its interior (`covers`) makes
    /// the sets pay against a smaller region, but only for a region whose
    /// absorbs keep finding what they add held already: from `SETS_AFTER`
    /// such passes of marks in a row (Unrolled GAN at 0.35 of its peak
    /// rebuilt most regions soon after, or absorbed regions they did not
    /// hold, and hashing them cost it a third more time).
    ///
    /// An absorbed region of empty interior reads nothing of this one's
    /// interior (see `absorb_with_marks`): marks then, whatever the sizes,
    /// and no pass is counted.
    pub fn absorb(&mut self, s: u32, s_region: &Region, compute: &[u64], marks: &mut Marks) {
        let theirs = if self.passes >= SETS_AFTER { s_region.absorb_cost() } else { s_region.len() };
        let reads = !s_region.interior.is_empty();
        if self.members.is_none() && (!reads || self.len() <= 8 * theirs + 64) {
            let covered = self.absorb_with_marks(s, s_region, compute, marks);
            if reads {
                self.passes = if covered { self.passes.saturating_add(1) } else { 0 };
            }
        } else {
            self.absorb_with_sets(s, s_region, compute);
        }
    }

    /// Storages listed (interior and frontier).
    fn len(&self) -> usize {
        self.interior.len() + self.frontier.len()
    }

    /// What absorbing this region reads at most, given hash sets of the
    /// receiving one: its roots instead of its interior where it has them
    /// (it is then often held already, see `covers`).
    fn absorb_cost(&self) -> usize {
        self.frontier.len() + self.roots.as_ref().map_or(self.interior.len(), |r| r.len())
    }

    /// `absorb` of each `(s, s_region)` in turn, with one pass over this
    /// region instead of one per absorb (or hash sets, kept, where this
    /// region is much the larger than what the absorbs read: a backward
    /// pass over a long released stretch absorbs small regions, or ones it
    /// holds already, into one as long as the stretch at every eviction):
    /// the same interior in the same order, the same compute, the same
    /// frontier as a set.
    pub fn absorb_all(&mut self, absorbed: &[(u32, Rc<Region>)], compute: &[u64], interior: &mut Marks, frontier: &mut Marks) {
        if self.passes >= SETS_AFTER && self.len() > 8 * absorbed.iter().map(|(_, r)| r.absorb_cost()).sum::<usize>() + 64 {
            for (s, s_region) in absorbed {
                self.absorb_with_sets(*s, s_region, compute);
            }
            return;
        }
        self.members = None;
        let mut covered = true;
        interior.reset();
        // Only the absorbed interiors read this one (see `absorb_with_marks`).
        let reads = absorbed.iter().any(|(_, r)| !r.interior.is_empty());
        if reads {
            for &x in &self.interior {
                debug_assert!(!absorbed.iter().any(|(s, _)| *s == x), "an absorbed storage {x} was held already");
                interior.insert(x);
            }
        }
        frontier.reset();
        for &x in &self.frontier {
            frontier.insert(x);
        }
        for (s, s_region) in absorbed {
            let s = *s;
            frontier.remove(s);
            for &x in &s_region.frontier {
                if frontier.insert(x) {
                    self.frontier.push(x); // may repeat a removed entry: deduplicated below
                }
            }
            covered &= add_interior(&mut self.interior, &mut self.compute, s, s_region, compute, interior);
        }
        // Keep each member once: removing it from the set as it is kept.
        self.frontier.retain(|&x| frontier.remove(x));
        if reads {
            self.passes = if covered { self.passes.saturating_add(1) } else { 0 };
        }
    }

    /// Move `x`, a storage with no links of its own that has just become
    /// resident, from the interior (if there) to the frontier (`keep`: not
    /// resident for good), with its compute out of the sum: what a walk now
    /// finds (the caller shows why nothing else moves).
    pub fn leave_for_frontier(&mut self, x: u32, x_compute: u64, keep: bool) {
        if self.members.as_ref().is_some_and(|m| !m.interior.contains(&x)) {
            return;
        }
        let Some(at) = self.interior.iter().position(|&v| v == x) else { return };
        self.interior.remove(at);
        self.compute = self.compute.checked_sub(x_compute).expect("a region's compute counts its interior");
        if let Some(m) = self.members.as_mut() {
            m.interior.remove(&x);
        }
        self.roots = None;
        if keep {
            self.add_new_to_frontier(x);
        }
    }

    /// Add resident `x`, a storage new to the graph that the base now links
    /// to, to the frontier: it cannot be there yet (no link reached it), so
    /// the frontier stays a set without a search.
    pub fn add_new_to_frontier(&mut self, x: u32) {
        if let Some(m) = self.members.as_mut() {
            let new = m.frontier.insert(x);
            debug_assert!(new, "storage {x} was on the frontier already");
        }
        debug_assert!(!self.frontier.contains(&x) && !self.interior.contains(&x));
        self.frontier.push(x);
    }

    /// (True if `s_region` was covered: see `covers`.)
    ///
    /// This region's interior is marked only where `s_region`'s interior is
    /// read: `s` itself is never held. It was on this region's frontier, so
    /// resident, when this region was last exact (an absorb is owed to the
    /// regions on the frontier of the evicted storage's own, which reach
    /// it), and the absorbs owed since added storages evicted while it was
    /// resident; a rematerialization in between renews the regions whose
    /// frontier it was on, dropping what they were owed. (A U-Net's encoder
    /// storages are absorbed one at a time into their decoder counterparts'
    /// long regions: marking or hashing each long region whole for them
    /// made its replay quadratic in its depth.)
    fn absorb_with_marks(&mut self, s: u32, s_region: &Region, compute: &[u64], marks: &mut Marks) -> bool {
        debug_assert!(!self.interior.contains(&s), "the absorbed storage {s} was held already");
        merge_frontier(&mut self.frontier, s, &s_region.frontier, marks);
        marks.reset();
        if !s_region.interior.is_empty() {
            for &x in &self.interior {
                marks.insert(x);
            }
        }
        add_interior(&mut self.interior, &mut self.compute, s, s_region, compute, marks)
    }

    fn absorb_with_sets(&mut self, s: u32, s_region: &Region, compute: &[u64]) {
        let members = self.members.get_or_insert_with(|| {
            let set = |v: &mut dyn ExactSizeIterator<Item = &u32>| {
                let mut h = FxHashSet::with_capacity_and_hasher(2 * v.len(), Default::default());
                h.extend(v.copied());
                h
            };
            Box::new(Members { interior: set(&mut self.interior.iter()), frontier: set(&mut self.frontier.iter()) })
        });
        if members.frontier.remove(&s) {
            let i = self.frontier.iter().position(|&x| x == s).expect("frontier set and list agree");
            self.frontier.swap_remove(i);
        }
        for &x in &s_region.frontier {
            if members.frontier.insert(x) {
                self.frontier.push(x);
            }
        }
        add_interior(&mut self.interior, &mut self.compute, s, s_region, compute, &mut members.interior);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_sets_per_generation() {
        let mut m = Marks::new(4);
        m.reset();
        assert!(m.insert(2));
        assert!(!m.insert(2));
        assert!(m.contains(2));
        m.reset();
        assert!(!m.contains(2));
        assert!(m.insert(2));
    }

    #[test]
    fn absorb_merges_frontier_and_interior_once() {
        let compute = [0u64, 1, 10, 100, 1000, 10000];
        let mut r = Region { interior: [1].into(), frontier: vec![2, 3], compute: 1, ..Default::default() };
        let s_region = Region { interior: [1, 4].into(), frontier: vec![3, 5], compute: 1001, ..Default::default() };
        let mut marks = Marks::new(6);
        r.absorb(2, &s_region, &compute, &mut marks);
        let mut f = r.frontier.clone();
        f.sort();
        let mut i: Vec<u32> = r.interior.iter().copied().collect();
        i.sort();
        assert_eq!(f, vec![3, 5]);
        assert_eq!(i, vec![1, 2, 4]);
        assert_eq!(r.compute, 1 + 10 + 1000);
        // A second absorb, as the first.
        let t_region = Region { interior: [4, 2].into(), frontier: vec![0], compute: 0, ..Default::default() };
        r.absorb(5, &t_region, &compute, &mut marks);
        let mut i: Vec<u32> = r.interior.iter().copied().collect();
        i.sort();
        assert_eq!(i, vec![1, 2, 4, 5]);
        assert_eq!(r.compute, 1 + 10 + 1000 + 10000);
        let mut f = r.frontier.clone();
        f.sort();
        assert_eq!(f, vec![0, 3]);
    }

    #[test]
    fn a_walk_via_a_neighbour_finds_both_regions() {
        use crate::rng::SplitMix64;
        let mut rng = SplitMix64::new(11);
        for _ in 0..40 {
            // A random DAG: each operator reads one to three earlier tensors.
            let n = 2 + rng.below(40) as usize;
            let mut log = String::from("{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x0\"}\n{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x0\",\"MEMORY\":\"8\"}\n");
            for i in 1..n {
                let args: Vec<String> = (0..1 + rng.below(3)).map(|_| format!("\"x{}\"", rng.below(i as u64))).collect();
                log += &format!(
                    "{{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[{}],\"RESULT\":[\"x{i}\"],\"TIME\":{}}}\n\
                     {{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x{i}\",\"MEMORY\":\"8\"}}\n\
                     {{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x{i}\",\"ALIAS\":\"-1\"}}\n",
                    args.join(","),
                    1 + rng.below(100)
                );
            }
            let trace = crate::parse_trace_bytes("dag.log", log.as_bytes(), false).unwrap();
            let storages = trace.tensors.len();
            let compute: Vec<u64> = (0..storages as u64).map(|_| 1 + rng.below(1000)).collect();
            for _ in 0..20 {
                let material: Vec<bool> = (0..storages).map(|_| rng.below(2) == 0).collect();
                // Some resident storages for good: left off every frontier, nothing else changes.
                let for_good: Vec<bool> = material.iter().map(|&m| m && rng.below(3) == 0).collect();
                let none = vec![false; storages];
                let g = GraphView { trace: &trace, created: storages as TensorId, material: &material, compute: &compute, for_good: &for_good };
                let (mut marks, mut walk) = (Marks::new(storages), Walk::default());
                let sorted = |r: &Region| {
                    let (mut i, mut f): (Vec<u32>, Vec<u32>) = (r.interior.iter().copied().collect(), r.frontier.clone());
                    i.sort_unstable();
                    f.sort_unstable();
                    (i, f, r.compute)
                };
                for base in (0..storages as u32).filter(|&b| material[b as usize]) {
                    let mut vias = Vec::new();
                    g.for_each_neighbour(base, Direction::Forward, |c| vias.push(c));
                    for via in vias.into_iter().filter(|&c| !material[c as usize]) {
                        let (mut plain, mut split, mut alone) = (Region::default(), Region::default(), Region::default());
                        plain.rebuild(base, Direction::Forward, &g, &mut marks, &mut walk);
                        let ahead = split.rebuild_via(base, via, Direction::Forward, &g, &mut marks, &mut walk);
                        assert_eq!(sorted(&split), sorted(&plain), "the base's region");
                        let mut all = Region::default();
                        all.rebuild(base, Direction::Forward, &GraphView { for_good: &none, ..g }, &mut marks, &mut walk);
                        let (i, f, c) = sorted(&all);
                        let kept: Vec<u32> = f.into_iter().filter(|&x| !for_good[x as usize]).collect();
                        assert_eq!(sorted(&plain), (i, kept, c), "storages resident for good are left off the frontier only");
                        let mut resident = material.clone();
                        resident[via as usize] = true;
                        let g2 = GraphView { material: &resident, ..g };
                        alone.rebuild(via, Direction::Forward, &g2, &mut marks, &mut walk);
                        assert_eq!(sorted(&ahead), sorted(&alone), "the region of the neighbour once resident");
                    }
                }
            }
        }
    }

    /// An absorb that reads the absorbed region's roots instead of its
    /// interior (`covers`), in each of the three ways, gives what a walk
    /// after the eviction finds: on random graphs, every resident base and
    /// every storage of its frontier evicted in turn.
    #[test]
    fn absorbing_by_roots_is_the_walk_after_the_eviction() {
        use crate::rng::SplitMix64;
        let mut rng = SplitMix64::new(23);
        let (mut covered, mut absorbs) = (0, 0);
        for _ in 0..60 {
            let n = 2 + rng.below(40) as usize;
            let mut log = String::from("{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x0\"}\n{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x0\",\"MEMORY\":\"8\"}\n");
            for i in 1..n {
                // Each operator reads one to three earlier tensors, mostly recent ones (long chains).
                let args: Vec<String> = (0..1 + rng.below(3)).map(|_| format!("\"x{}\"", i - 1 - rng.below(i.min(4) as u64) as usize)).collect();
                log += &format!(
                    "{{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[{}],\"RESULT\":[\"x{i}\"],\"TIME\":1}}\n\
                     {{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x{i}\",\"MEMORY\":\"8\"}}\n\
                     {{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x{i}\",\"ALIAS\":\"-1\"}}\n",
                    args.join(",")
                );
            }
            let trace = crate::parse_trace_bytes("dag.log", log.as_bytes(), false).unwrap();
            let storages = trace.tensors.len();
            let compute: Vec<u64> = (0..storages as u64).map(|_| 1 + rng.below(1000)).collect();
            let none = vec![false; storages];
            let sorted = |r: &Region| {
                let (mut i, mut f): (Vec<u32>, Vec<u32>) = (r.interior.iter().copied().collect(), r.frontier.clone());
                i.sort_unstable();
                f.sort_unstable();
                (i, f, r.compute)
            };
            for _ in 0..10 {
                let material: Vec<bool> = (0..storages).map(|_| rng.below(3) != 0).collect();
                let g = GraphView { trace: &trace, created: storages as TensorId, material: &material, compute: &compute, for_good: &none };
                let (mut marks, mut marks2, mut walk) = (Marks::new(storages), Marks::new(storages), Walk::default());
                for base in (0..storages as u32).filter(|&b| material[b as usize]) {
                    let mut own = Region::default();
                    own.rebuild(base, Direction::Forward, &g, &mut marks, &mut walk);
                    for s in own.frontier.clone() {
                        let mut s_region = Region::default();
                        s_region.rebuild(s, Direction::Forward, &g, &mut marks, &mut walk);
                        let mut after = material.clone();
                        after[s as usize] = false;
                        let mut roots = Vec::new();
                        g.for_each_neighbour(s, Direction::Forward, |c| {
                            if c != s && !after[c as usize] {
                                roots.push(c);
                            }
                        });
                        s_region.roots = Some(roots.into_boxed_slice());
                        let mut walked = Region::default();
                        walked.rebuild(base, Direction::Forward, &GraphView { material: &after, ..g }, &mut marks, &mut walk);
                        absorbs += 1;
                        covered += usize::from(Region::covers(&s_region, &own.interior.iter().copied().collect::<FxHashSet<u32>>()));
                        let (mut marked, mut hashed, mut all) = (own.clone(), own.clone(), own.clone());
                        marked.absorb_with_marks(s, &s_region, &compute, &mut marks);
                        hashed.absorb_with_sets(s, &s_region, &compute);
                        all.absorb_all(&[(s, Rc::new(s_region))], &compute, &mut marks, &mut marks2);
                        for r in [&marked, &hashed, &all] {
                            assert_eq!(sorted(r), sorted(&walked), "base {base}, evicted {s}");
                        }
                    }
                }
            }
        }
        assert!(covered > absorbs / 10 && covered < absorbs, "{covered} of {absorbs} absorbs covered by their roots");
    }

    /// Absorbing with marks and with hash sets gives the same region, in
    /// the same order, whichever `absorb` picks at each step.
    #[test]
    fn marks_and_sets_absorb_alike() {
        use crate::rng::SplitMix64;
        let n = 400u32;
        let compute: Vec<u64> = (0..n as u64).map(|i| 1 + i * i).collect();
        let mut rng = SplitMix64::new(13);
        let pick = |k: u64, rng: &mut SplitMix64| -> Vec<u32> {
            let mut v: Vec<u32> = (0..k).map(|_| rng.below(n as u64) as u32).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let mut via_sets = 0;
        for _ in 0..300 {
            let frontier = pick(8, &mut rng);
            // Small and large regions, so that both ways are taken.
            let most = if rng.below(2) == 0 { 30 } else { 600 };
            let k = 1 + rng.below(most);
            let interior: VecDeque<u32> = pick(k, &mut rng).into_iter().filter(|x| !frontier.contains(x)).collect();
            let base = Region { interior, frontier, compute: 5, ..Default::default() };
            let (mut marked, mut hashed, mut chosen) = (base.clone(), base.clone(), base);
            let mut marks = Marks::new(n as usize);
            for _ in 0..1 + rng.below(6) {
                let Some(&s) = marked.frontier.get(rng.below(marked.frontier.len().max(1) as u64) as usize) else { break };
                let most = if rng.below(2) == 0 { 3 } else { 40 };
                let k = rng.below(most);
                // As in a replay: what is resident (the frontier, `s` until
                // now) is in no interior, and what is evicted on no frontier.
                let interior: VecDeque<u32> = pick(k, &mut rng).into_iter().filter(|x| !marked.frontier.contains(x)).collect();
                let frontier = pick(rng.below(6), &mut rng)
                    .into_iter()
                    .filter(|x| *x != s && !interior.contains(x) && !marked.interior.contains(x))
                    .collect();
                let s_region = Region { interior, frontier, ..Default::default() };
                marked.absorb_with_marks(s, &s_region, &compute, &mut marks);
                hashed.absorb_with_sets(s, &s_region, &compute);
                chosen.absorb(s, &s_region, &compute, &mut marks);
                via_sets += usize::from(chosen.members.is_some());
                for r in [&hashed, &chosen] {
                    assert_eq!((&marked.interior, &marked.frontier, marked.compute), (&r.interior, &r.frontier, r.compute));
                }
            }
        }
        assert!(via_sets > 0, "some absorbs choose hash sets");
    }

    /// A region of empty interior taking an absorbed region over gives what
    /// `absorb` gives: interior in the same order, frontier, compute, with
    /// or without the absorbed region's hash sets.
    #[test]
    fn take_over_is_absorb() {
        use crate::rng::SplitMix64;
        let n = 64u32;
        let compute: Vec<u64> = (0..n as u64).map(|i| 3 + i * 7).collect();
        let mut rng = SplitMix64::new(17);
        let pick = |k: u64, rng: &mut SplitMix64| -> Vec<u32> {
            // (Storage n - 1 is kept out: the hash sets are built with it below.)
            let mut v: Vec<u32> = (0..k).map(|_| rng.below(n as u64 - 1) as u32).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        for round in 0..500 {
            let s = rng.below(n as u64 - 1) as u32;
            let mut frontier: Vec<u32> = pick(rng.below(5), &mut rng).into_iter().filter(|&x| x != s).collect();
            frontier.insert(rng.below(frontier.len() as u64 + 1) as usize, s);
            let receiver = Region { frontier, ..Default::default() };
            let interior: VecDeque<u32> = pick(1 + rng.below(30), &mut rng).into_iter().filter(|&x| x != s).collect();
            let sum = interior.iter().map(|&x| compute[x as usize]).sum();
            let s_frontier = pick(rng.below(6), &mut rng).into_iter().filter(|&x| x != s && !interior.contains(&x)).collect();
            let mut s_region = Region { interior, frontier: s_frontier, compute: sum, ..Default::default() };
            let mut marks = Marks::new(n as usize);
            if round % 2 == 0 {
                // Hash sets built by an absorb, kept by the take-over.
                let extra = Region::default();
                s_region.absorb_with_sets(n - 1, &extra, &compute);
                s_region.interior.pop_back();
                s_region.compute -= compute[(n - 1) as usize];
                s_region.members.as_mut().unwrap().interior.remove(&(n - 1));
            }
            let (mut absorbed, mut taken) = (receiver.clone(), receiver);
            absorbed.absorb_with_marks(s, &s_region, &compute, &mut marks);
            taken.take_over(s, s_region, compute[s as usize], &mut marks);
            assert_eq!((&taken.interior, &taken.frontier, taken.compute), (&absorbed.interior, &absorbed.frontier, absorbed.compute));
            if let Some(m) = &taken.members {
                let i: FxHashSet<u32> = taken.interior.iter().copied().collect();
                let f: FxHashSet<u32> = taken.frontier.iter().copied().collect();
                assert_eq!((&m.interior, &m.frontier), (&i, &f), "the kept hash sets are the lists'");
            }
        }
    }

    #[test]
    fn absorb_all_is_absorb_in_turn() {
        use crate::rng::SplitMix64;
        let n = 24u32;
        let compute: Vec<u64> = (0..n as u64).map(|i| 1 << i).collect();
        let mut rng = SplitMix64::new(7);
        let mut pick = |k: u64| -> Vec<u32> {
            let mut v: Vec<u32> = (0..k).map(|_| rng.below(n as u64) as u32).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        for _ in 0..500 {
            // As in a replay, the storages absorbed in turn were resident until
            // evicted: in no interior before (this one's, or those of the ones
            // evicted earlier).
            let evicted = pick(5);
            let base = Region {
                interior: pick(6).into_iter().filter(|x| !evicted.contains(x)).collect(),
                frontier: pick(6),
                compute: 3,
                ..Default::default()
            };
            let absorbed: Vec<(u32, Rc<Region>)> = (0..evicted.len())
                .map(|i| {
                    let s = evicted[i];
                    let r = Region {
                        interior: pick(6).into_iter().filter(|x| !evicted[i..].contains(x)).collect(),
                        frontier: pick(6).into_iter().filter(|&x| x != s).collect(),
                        ..Default::default()
                    };
                    (s, Rc::new(r))
                })
                .collect();
            let (mut one, mut all) = (base.clone(), base.clone());
            let (mut m1, mut m2) = (Marks::new(n as usize), Marks::new(n as usize));
            for (s, r) in &absorbed {
                one.absorb(*s, r, &compute, &mut m1);
            }
            all.absorb_all(&absorbed, &compute, &mut m1, &mut m2);
            assert_eq!(one.interior, all.interior, "same interior, same order");
            assert_eq!(one.compute, all.compute);
            let (mut f1, mut f2) = (one.frontier.clone(), all.frontier.clone());
            f1.sort_unstable();
            f2.sort_unstable();
            assert_eq!(f1, f2);
        }
    }
}
