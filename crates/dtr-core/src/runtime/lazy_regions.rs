//! Lazy evicted-neighbourhood regions: which regions are stale, when a
//! stale one must be rebuilt, and the absorbs owed to the others.

use super::Replay;
use crate::regions::{Direction, GraphView, Region};
use crate::trace::TensorId;
use std::rc::Rc;

/// Which stale regions may not wait to be read (see `Replay::ensure_exact`):
/// in a stretch (`Forward`: an operator with an evicted input; `All`: one
/// whose output aliases an evicted input), or always (`All` in the eager
/// oracle, `RunConfig::eager_regions`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Eager {
    None,
    Forward,
    All,
}

/// What is kept of one region between its rebuilds, together: a mark reads
/// and writes most of it (a thrashing replay marks about 200 regions an
/// eviction).
#[derive(Clone, Copy, Debug)]
pub(super) struct Lazy {
    /// The storage is pinned or retained: its regions are never read again
    /// (`regions_unused` reads it here, beside what a mark reads next).
    pub(super) unused: bool,
    /// Owed a rebuild before it is read exactly.
    pub(super) stale: bool,
    /// While stale: a lower bound of its compute (see `mark_stale`).
    pub(super) bound: u64,
    /// How often it was marked, and at which mark its direct evicted
    /// neighbours last raised the bound (`raise_bound`).
    pub(super) marked: u64,
    pub(super) neighbours_at: u64,
}

impl Default for Lazy {
    fn default() -> Self {
        // Never raised: no mark count matches.
        Lazy { unused: false, stale: false, bound: 0, marked: 0, neighbours_at: u64::MAX }
    }
}

impl Replay<'_> {
    /// Rebuild the regions of fresh storages, then of their frontiers.
    /// `first_run`: the first output of an operator computed for the first
    /// time (not a rematerialization), whose outputs' storages are `fresh`.
    pub(super) fn rebuild_around(&mut self, fresh: &[u32], first_run: Option<TensorId>) {
        let mut fwd_again: Vec<u32> = Vec::new();
        let mut rev_again: Vec<u32> = Vec::new();
        // What the regions marked below can lose (see `mark_stale`).
        let (mut fwd_loss, mut rev_loss) = (0u64, 0u64);
        for &s in fresh {
            if self.cfg.eager_regions {
                self.rebuild(s, Direction::Forward);
            } else if !self.take_parent_region(s, fresh) && !self.take_region_ahead(s) {
                match self.awaiting(s) {
                    Some(c) => self.rebuild_via(s, c),
                    None => self.rebuild(s, Direction::Forward),
                }
            }
            self.rebuild(s, Direction::Reverse);
            let si = s as usize;
            rev_again.extend(self.regions.fwd[si].frontier.iter().copied());
            fwd_again.extend(self.regions.rev[si].frontier.iter().copied());
            // Compute sums fit in u64 (the parser bounds the total).
            fwd_loss = fwd_loss.saturating_add(self.compute[si] + self.regions.fwd[si].compute);
            rev_loss = rev_loss.saturating_add(self.compute[si] + self.regions.rev[si].compute);
        }
        if self.regions.eager == Eager::Forward {
            // A kept forward region may lack the outputs of the stretch's
            // operator where a walk now has them (see `mark_stale`).
            fwd_loss = fwd_loss.saturating_add(self.stretch_outputs_compute());
        }
        // Each once (marks, not a sort: a thrashing replay revisits thousands
        // a step). Order is free: rebuilds are independent, and a bound
        // lowered twice is still a bound. One region's frontier holds each
        // storage once already (every way of making one keeps it a set).
        if fresh.len() > 1 {
            for again in [&mut fwd_again, &mut rev_again] {
                self.marks.reset();
                again.retain(|&x| self.marks.insert(x));
            }
        }
        // Fresh storages are always rebuilt: their frontiers say whom to revisit.
        let grow_from = first_run.filter(|_| self.regions.eager == Eager::None && !self.cfg.eager_regions);
        // The operator of a stretch (see `ensure_exact`) run at last.
        let stretch_end = first_run.filter(|_| self.regions.eager == Eager::Forward && !self.cfg.eager_regions);
        for s in fwd_again {
            if self.regions_unused(s) {
                continue;
            }
            match (grow_from, stretch_end) {
                (Some(first), _) if self.grow_with_new_outputs(s, first) => {}
                (_, Some(first)) if self.outputs_made_resident(s, first) => {}
                _ => self.renew_or_mark(s, Direction::Forward, fwd_loss),
            }
        }
        for s in rev_again {
            if !self.regions_unused(s) {
                self.renew_or_mark(s, Direction::Reverse, rev_loss);
            }
        }
    }

    /// After a rematerialization, rebuild the region of `s` in `dir` at
    /// once where every neighbour of `s` that way is resident (the walk
    /// then reads the links of `s` alone: the interior is empty); else mark
    /// it stale (`mark_stale`).
    ///
    /// Why. A rebuild now is what the reference does here, and a late one
    /// gives the same region (see `ensure_exact`; in a stretch the
    /// reference rebuilds at once too), so either is exact; the rebuild
    /// costs the links of `s`, the mark a later walk. Left stale, such a
    /// region waits until its storage is read or evicted, by when its
    /// neighbours may be evicted again and the walk long: in a backward
    /// pass each activation rematerialized just before its gradient, then
    /// released, marked its parent's forward region stale, and the walk
    /// that made it exact went through every activation released before
    /// (a replay quadratic in the depth).
    fn renew_or_mark(&mut self, s: u32, dir: Direction, loss: u64) {
        let created = self.created;
        let links = dir.links(self.trace).get(s);
        if links.iter().take_while(|&&(a, _)| a < created).all(|&(_, n)| self.material[n as usize]) {
            self.rebuild(s, dir);
        } else {
            self.mark_stale(s, dir, loss);
        }
    }

    /// Bring the exact forward region of `p`, an input of an operator just
    /// run for the first time with every input resident, up to date in
    /// place instead of marking it stale: true if it was exact and built
    /// before the operator's links existed (`first`: its first output).
    ///
    /// Why that is exact. The operator's only new links lead from its
    /// inputs (resident, and locked while it ran, so never walked through
    /// nor chosen) to its outputs' new storages, which have no links of
    /// their own yet and are resident now. A walk from `p` therefore takes
    /// the steps it took before, plus one to each of those storages it
    /// links to, which lands on the frontier (unless resident for good).
    /// The interior and its compute are unchanged, and so is `p`'s key.
    /// Absorbs still owed commute with this: the regions they add were
    /// built before the new storages existed. Any other region reaches the
    /// new links only through an input, which is resident: no change.
    fn grow_with_new_outputs(&mut self, p: u32, first: TensorId) -> bool {
        let pi = p as usize;
        let region = &mut self.regions.fwd[pi];
        if self.regions.lazy[pi][Direction::Forward as usize].stale || region.created > first {
            return false;
        }
        let links = self.trace.storage_fwd.get(p);
        // Links are sorted by activation; the operator's are the last ones made.
        let from = links.partition_point(|&(a, _)| a < first);
        for &(a, n) in &links[from..] {
            if a >= self.created {
                break;
            }
            debug_assert!(self.material[n as usize] && n != p);
            if !self.for_good[n as usize] {
                region.add_new_to_frontier(n);
            }
        }
        if region.created == first {
            region.created = self.created; // still what a walk now finds
        }
        true
    }

    /// At the end of a stretch, bring the forward region of `p`, an input
    /// of the operator just run (its first output `first`), up to date in
    /// place instead of marking it stale: true if it was exact and built in
    /// the stretch, and the operator's outputs are all new storages.
    ///
    /// Why that is exact. A region built in the stretch is a walk that saw
    /// the operator's links, with its outputs evicted (not yet computed),
    /// and kept up to date since, it is what a walk finds now but for the
    /// outputs, now resident (see `flush_before_evicting`). New storages
    /// have no links of their own yet: a walk now takes the same steps,
    /// but stops at each output it reaches, which lands on the frontier
    /// (unless resident for good) instead of in the interior, and reaches
    /// nothing through it. So the outputs in the interior leave it, with
    /// their compute, for the frontier, and nothing else moves. Owed
    /// absorbs are applied first: they may hold the outputs too. (A
    /// backward pass rematerializes an activation for its gradient, then
    /// releases it: the walk that made its region exact went through every
    /// activation released before, once a layer: LSTM at half its peak,
    /// 430 walks of 1,000 storages on average.)
    fn outputs_made_resident(&mut self, p: u32, first: TensorId) -> bool {
        let pi = p as usize;
        if self.regions.lazy[pi][Direction::Forward as usize].stale || self.regions.fwd[pi].created != self.created {
            return false;
        }
        let trace = self.trace;
        let o = &trace.ops[trace.tensors[first as usize].op as usize];
        let outputs = o.first_output..o.first_output + o.n_outputs;
        if outputs.clone().any(|t| self.storage(t) != t || !self.material[t as usize]) {
            return false;
        }
        self.settle_region(p, Direction::Forward);
        let region = &mut self.regions.fwd[pi];
        for t in outputs {
            region.leave_for_frontier(t, self.compute[t as usize], !self.for_good[t as usize]);
        }
        self.touch(p);
        true
    }

    /// Give fresh `x` the forward region of a resident parent that reached
    /// nothing evicted but through `x` (see `Region::into_region_of_front`),
    /// if that region is exact and current; the parent's own is then stale.
    /// A deep chain of rematerializations so costs O(1) a level, not a walk
    /// of the chain.
    ///
    /// The parent's other neighbours were resident before this operator ran
    /// (`fresh` are the storages it made resident) or are evicted and
    /// reached from `x` through evicted storages (a chain whose steps read
    /// the two before them, or the k-th before: `reaches_the_rest`), so every
    /// evicted storage of the parent's region lay beyond `x`, and the region
    /// less `x` is exactly what a walk from `x` finds (the graph is
    /// acyclic). Its frontier may also hold the parent's resident
    /// neighbours: each stays only if some storage of the region links to
    /// it.
    fn take_parent_region(&mut self, x: u32, fresh: &[u32]) -> bool {
        let trace = self.trace;
        let created = self.created;
        let links = |s: u32, dir: Direction| {
            dir.links(trace).get(s).iter().take_while(move |&&(a, _)| a < created).map(|&(_, n)| n)
        };
        for p in links(x, Direction::Reverse) {
            let pi = p as usize;
            let usable = self.material[pi]
                && !self.regions_unused(p)
                && !self.regions.lazy[pi][0].stale
                && self.regions.owed_fwd[pi].is_empty()
                && self.regions.fwd[pi].created == created
                && links(p, Direction::Forward).all(|n| n == x || !self.material[n as usize] || !fresh.contains(&n))
                && self.reaches_the_rest(x, p);
            if usable {
                // First after a rebuild; anywhere after absorbs.
                let Some(at) = self.regions.fwd[pi].interior.iter().position(|&v| v == x) else {
                    continue;
                };
                let mut region = std::mem::take(&mut self.regions.fwd[pi]);
                let lost = region.compute;
                // (Only a resident one can be on the frontier for no other reason.)
                if links(p, Direction::Forward).any(|n| n != x && self.material[n as usize]) {
                    let marks = &mut self.marks;
                    marks.reset();
                    for &v in &region.interior {
                        marks.insert(v);
                    }
                    region.frontier.retain(|&c| {
                        !links(p, Direction::Forward).any(|n| n == c) || links(c, Direction::Reverse).any(|q| marks.contains(q))
                    });
                }
                self.regions.fwd[x as usize] = region.into_region_of_front(at, self.compute[x as usize]);
                self.renewing(x, Direction::Forward);
                // Its region was `x` and x's: all of it left.
                self.mark_stale(p, Direction::Forward, lost);
                return true;
            }
        }
        false
    }

    /// Whether every evicted forward neighbour of `p` but `x` is reached
    /// from `x` through evicted storages, found by a walk forward from `x`
    /// that gives up after `REACH_LIMIT` storages (then false: unknown).
    fn reaches_the_rest(&mut self, x: u32, p: u32) -> bool {
        /// Enough for a chain whose steps read the one and the k-th before
        /// them up to k = 20 (the walk reaches the parent's k-th child from
        /// its first one in k - 1 steps); a bound on what a failing check costs.
        const REACH_LIMIT: usize = 256;
        let (trace, created, material) = (self.trace, self.created, &self.material);
        let links = |s: u32| trace.storage_fwd.get(s).iter().take_while(move |&&(a, _)| a < created).map(|&(_, n)| n);
        let mut targets = links(p).filter(|&n| n != x && !material[n as usize]).peekable();
        if targets.peek().is_none() {
            return true;
        }
        let marks = &mut self.marks;
        marks.reset();
        let queue = &mut self.reach_queue;
        queue.clear();
        queue.push(x);
        let mut next = 0;
        while next < queue.len() && queue.len() <= REACH_LIMIT {
            let s = queue[next];
            next += 1;
            for n in links(s) {
                if !material[n as usize] && marks.insert(n) {
                    queue.push(n);
                }
            }
            while targets.peek().is_some_and(|&t| marks.contains(t)) {
                targets.next();
            }
            if targets.peek().is_none() {
                return true;
            }
        }
        false
    }

    /// The storage whose materialization waits for fresh `s`, when it is
    /// evicted and a forward neighbour of `s`: it is made resident next (its
    /// other inputs permitting), and its forward region is most of `s`'s
    /// (a thrashing replay rematerializes chains of them).
    fn awaiting(&self, s: u32) -> Option<u32> {
        let k = self.frames.len();
        let c = self.storage(self.frames.get(k.checked_sub(2)?)?.tensor);
        let ci = c as usize;
        let usable = c != s && !self.material[ci] && !self.regions_unused(c);
        let created = self.created;
        let neighbour = || self.trace.storage_fwd.get(s).iter().take_while(|&&(a, _)| a < created).any(|&(_, n)| n == c);
        (usable && neighbour()).then_some(c)
    }

    /// Walk the forward region of fresh `s` and keep, found by the same
    /// walk, the one its awaiting neighbour `c` will have (see
    /// `Region::rebuild_via`, `take_region_ahead`).
    fn rebuild_via(&mut self, s: u32, c: u32) {
        self.renewing(s, Direction::Forward);
        let si = s as usize;
        let g = GraphView { trace: self.trace, created: self.created, material: &self.material, compute: &self.compute, for_good: &self.for_good };
        let mut ahead = self.regions.fwd[si].rebuild_via(s, c, Direction::Forward, &g, &mut self.marks, &mut self.walk);
        self.regions.fwd[si].sums_at = self.regions.compute_changes;
        ahead.sums_at = self.regions.compute_changes;
        self.regions.ahead = Some((c, ahead));
    }

    /// Give fresh `s` the forward region found ahead for it (`rebuild_via`)
    /// if a walk now would find the same.
    ///
    /// Why the check suffices. A walk reads the links below `created`, the
    /// residency of the storages it reaches (its interior and frontier:
    /// whatever else it reads is a link's target from there) and the
    /// compute of those evicted. With `created` unchanged no link was added,
    /// and no storage's compute changed: only an alias output of an
    /// operator changes it, and an output moves `created` (`sums_at` says
    /// the same of evicted storages). So if every storage of the interior
    /// is still evicted and every one of the frontier still resident, a
    /// walk now would take the same steps to the same region, whatever
    /// happened in between.
    fn take_region_ahead(&mut self, s: u32) -> bool {
        let Some((_, region)) = self.regions.ahead.take_if(|(c, _)| *c == s) else {
            return false;
        };
        let material = &self.material;
        let same = region.created == self.created
            && region.sums_at == self.regions.compute_changes
            && region.interior.iter().all(|&v| !material[v as usize])
            && region.frontier.iter().all(|&f| material[f as usize]);
        if !same {
            return false;
        }
        self.renewing(s, Direction::Forward);
        self.regions.fwd[s as usize] = region;
        true
    }

    /// Mark a region stale after a rematerialization that can take at most
    /// `loss` compute out of it, lowering its bound by that much.
    ///
    /// Why the bound holds. Rematerializing a set X of storages (the fresh
    /// outputs of one operator) takes a storage v out of the forward region
    /// of p only if every path of evicted storages from p to v passes
    /// through X; after the last storage x of X on such a path the rest is
    /// still evicted, so v is x or lies in x's new forward region. Hence the
    /// region loses at most the compute of X and of their new regions (the
    /// same holds in reverse), and everything else only adds to a region
    /// (an eviction, a new link, an alias's compute). So a lower bound of a
    /// region, lowered by `loss` at each mark, stays one; a bound raised to
    /// what its direct neighbours show (`raise_bound`) too. In a stretch
    /// (see `ensure_exact`) a kept forward region, a fresh storage's
    /// included, holds at least what a walk without the operator's links
    /// finds and at most what a walk with them finds: the two differ only
    /// by the operator's outputs, so `loss` adds their compute there (a
    /// region read after a late rebuild is a walk with them).
    #[inline]
    pub(super) fn mark_stale(&mut self, s: u32, dir: Direction, loss: u64) {
        let (si, d) = (s as usize, dir as usize);
        // One per mark: 2^64 marks would take centuries.
        let lazy = &mut self.regions.lazy[si][d];
        lazy.marked += 1;
        if lazy.stale {
            // Most marks of a thrashing replay fall on stale regions: the
            // key reads the bound, so it changes only if the bound moves.
            let after = lazy.bound.saturating_sub(loss);
            if after != lazy.bound {
                lazy.bound = after;
                self.touch(s);
            }
        } else {
            self.mark_fresh_stale(s, dir, loss);
        }
    }

    /// `mark_stale` of a region that is not stale yet.
    #[cold]
    fn mark_fresh_stale(&mut self, s: u32, dir: Direction, loss: u64) {
        let (si, d) = (s as usize, dir as usize);
        // Exact, or owed absorbs (which only add): a lower bound.
        let before = match dir {
            Direction::Forward => self.regions.fwd[si].compute,
            Direction::Reverse => self.regions.rev[si].compute,
        };
        let lazy = &mut self.regions.lazy[si][d];
        lazy.bound = before.saturating_sub(loss);
        lazy.stale = true;
        // Nothing reads a stale region's storages before its rebuild.
        match dir {
            Direction::Forward => self.regions.fwd[si].forget(),
            Direction::Reverse => self.regions.rev[si].forget(),
        }
        self.touch(s);
        let list = &mut self.regions.stale_list[d];
        if list.len() >= self.regions.lazy.len() + 64 {
            // Drop the entries of regions rebuilt since they were listed.
            let lazy = &self.regions.lazy;
            list.retain(|&x| lazy[x as usize][dir as usize].stale);
        }
        list.push(s);
    }

    /// Make both regions of `s` exact before they are read: rebuild a stale
    /// one, apply the absorbs owed to the other.
    ///
    /// Why a region may wait, stale, until it is read. Storage links go from
    /// lower to higher storage ids (an output's storage is new, or the
    /// storage of its operator's single argument), so the storage graph is
    /// acyclic, and then absorbing an evicted frontier storage gives exactly
    /// the interior, frontier and compute a rebuild would (the absorbed
    /// region cannot reach back to the base); rematerialization marks every
    /// region it changes stale. So a region kept up to date is what a
    /// rebuild would give, and a late rebuild equals an early one plus the
    /// updates — with one exception, which the reference keeps: a model
    /// operator with an evicted input creates links out of that evicted
    /// storage, and until the operator runs, forward regions built before
    /// see none of them while regions rebuilt since see them all (its
    /// inputs' materialization then marks them all stale). Over that
    /// stretch (`Eager::Forward`) the reference rebuilds forward regions
    /// when marked; here they wait, as elsewhere, until read or until an
    /// absorb would make the early rebuild differ from a late one (see
    /// `flush_before_evicting`); reverse regions cannot reach the new links
    /// (the new storages have no children yet). An alias output of an
    /// evicted input also adds compute to an evicted storage, which both
    /// directions' sums would see, and links to an old storage, which
    /// reverse walks see too (`Eager::All`): every stale region is rebuilt,
    /// and owed absorbs applied (`settle_owed`), before such a stretch; in
    /// it, stale regions wait until read or until an absorb would make the
    /// early rebuild differ (see `flush_all_before_evicting`).
    /// Proven on the golden records and A/B against eager rebuilding.
    #[inline]
    pub(super) fn ensure_exact(&mut self, s: u32) {
        let si = s as usize;
        if self.regions.lazy[si][0].stale {
            self.rebuild(s, Direction::Forward);
        }
        if self.regions.lazy[si][1].stale {
            self.rebuild(s, Direction::Reverse);
        }
        self.settle_regions(s);
    }

    /// Rebuild the stale forward regions before evicting `s` in a stretch
    /// (see `ensure_exact`) if its forward region, about to be absorbed
    /// into the regions around it, may not be what a walk from `s` finds
    /// now.
    ///
    /// Why the others may wait. The reference rebuilds a region marked in
    /// the stretch at once (a walk that sees the operator's links) and
    /// then absorbs, at each eviction of a storage x of its frontier, x's
    /// region as it is kept. A rebuild later in the stretch walks through
    /// x instead: the same, if x's region is what a walk from x finds now
    /// (each absorb then adds exactly what the walk finds beyond x, as
    /// outside a stretch). Kept regions differ from a walk now only by the
    /// operator's new links, which lead from its inputs to its outputs: a
    /// region that reaches no input (x is none, and none is in its
    /// interior) has none to see, and one that reaches an input has seen
    /// them if its interior holds every output (new storages, evicted
    /// until the operator runs, with no links of their own). Otherwise the
    /// stale regions are rebuilt first, as the reference has them; every
    /// region then is the reference's again. Outputs that are not all new
    /// storages: rebuilt first too. Proven on the golden records and A/B
    /// against eager rebuilding (`eager_regions`).
    pub(super) fn flush_before_evicting(&mut self, s: u32) {
        if self.regions.stale_list[Direction::Forward as usize].is_empty() || !self.absorb_may_differ(s) {
            return;
        }
        self.flush(Eager::Forward);
    }

    /// Rebuild every stale region before evicting `s` in a stretch whose
    /// operator has an output aliasing an evicted input (`Eager::All`) if
    /// a region of `s`, about to be absorbed into the regions around it,
    /// may not be what a walk from `s` finds now.
    ///
    /// Why the others may wait, as in a stretch of new outputs only (see
    /// `flush_before_evicting`). Such an operator changes two things at its
    /// start. The compute of the aliased storage grows: every region stale then
    /// was rebuilt just before (`compute_op`), and a region marked since,
    /// rebuilt at its mark or later, sums the same compute (an evicted
    /// storage's compute changes only at the start of such a stretch, which
    /// rebuilds every stale region first; an absorb adds what it adds at the
    /// compute of now). And links appear from the operator's inputs to its
    /// outputs, the aliased storages among them: a forward walk sees them
    /// through an evicted input, a reverse walk through an output's storage. A
    /// region of `s` rebuilt in the stretch is a walk that sees them (its
    /// `created` is now's); one kept from before sees them only if its interior
    /// holds such a storage, or `s` is one. Otherwise the absorbs are what
    /// walks now would find, and a stale region may wait to be read. (An
    /// Unrolled GAN at a fifth of its peak rebuilt every stale region at each
    /// of 21,781 evictions of twelve such stretches: 1.2 million walks, three
    /// fifths of the replay.)
    /// Proven on the golden records and A/B against eager rebuilding.
    pub(super) fn flush_all_before_evicting(&mut self, s: u32) {
        let stale = &self.regions.stale_list;
        if stale[0].is_empty() && stale[1].is_empty() {
            return;
        }
        if self.kept_regions_may_differ(s) {
            self.flush(Eager::All);
        }
    }

    /// Whether a region of `s` was kept from before the stretch's links
    /// and may see them (see `flush_all_before_evicting`).
    fn kept_regions_may_differ(&self, s: u32) -> bool {
        let Some(op) = self.regions.stretch_op else { return true };
        let o = &self.trace.ops[op as usize];
        let inputs = self.trace.parents(o.first_output).iter().copied();
        let outputs = o.first_output..o.first_output + o.n_outputs;
        let (fwd, rev) = (&self.regions.fwd[s as usize], &self.regions.rev[s as usize]);
        (fwd.created < self.created && self.holds_storage_of(s, fwd, inputs))
            || (rev.created < self.created && self.holds_storage_of(s, rev, outputs))
    }

    /// Whether `s`, or a storage of the interior of its `region`, is the
    /// storage of one of `tensors`.
    fn holds_storage_of(&self, s: u32, region: &Region, tensors: impl Iterator<Item = TensorId> + Clone) -> bool {
        let of = |v: u32| tensors.clone().any(|t| self.storage(t) == v);
        of(s) || region.interior.iter().any(|&v| of(v))
    }

    /// Whether the forward region of `s` may differ from a walk now (see
    /// `flush_before_evicting`).
    fn absorb_may_differ(&self, s: u32) -> bool {
        let Some(op) = self.regions.stretch_op else { return true };
        if self.regions_unused(s) {
            return true;
        }
        let o = &self.trace.ops[op as usize];
        let region = &self.regions.fwd[s as usize];
        if !self.holds_storage_of(s, region, self.trace.parents(o.first_output).iter().copied()) {
            return false;
        }
        let mut outputs = o.first_output..o.first_output + o.n_outputs;
        outputs.any(|t| self.storage(t) != t || !region.interior.contains(&t))
    }

    /// The compute of the stretch's operator's outputs not yet resident.
    fn stretch_outputs_compute(&self) -> u64 {
        let Some(op) = self.regions.stretch_op else { return 0 };
        let o = &self.trace.ops[op as usize];
        (o.first_output..o.first_output + o.n_outputs)
            .map(|t| self.storage(t))
            .filter(|&s| !self.material[s as usize])
            .fold(0u64, |a, s| a.saturating_add(self.compute[s as usize]))
    }

    /// Rebuild the stale regions `which` asks for (see `ensure_exact`;
    /// regions off, nothing is ever stale).
    pub(super) fn flush(&mut self, which: Eager) {
        let dirs: &[Direction] = match which {
            Eager::None => &[],
            Eager::Forward => &[Direction::Forward],
            Eager::All => &[Direction::Forward, Direction::Reverse],
        };
        for &dir in dirs {
            while let Some(s) = self.regions.stale_list[dir as usize].pop() {
                // Unmarked since: rebuilt meanwhile.
                if !self.regions.lazy[s as usize][dir as usize].stale {
                    continue;
                }
                if self.regions_unused(s) {
                    self.regions.lazy[s as usize][dir as usize].stale = false;
                } else {
                    self.rebuild(s, dir); // clears the mark
                }
            }
        }
    }

    /// List `s` before an absorb is first owed to one of its regions.
    #[inline]
    pub(super) fn list_owed(&mut self, s: u32) {
        let si = s as usize;
        if self.regions.owed_fwd[si].is_empty() && self.regions.owed_rev[si].is_empty() {
            if self.regions.owed_list.len() >= self.regions.owed_fwd.len() + 64 {
                // Drop the entries of regions settled since they were listed.
                let (fwd, rev) = (&self.regions.owed_fwd, &self.regions.owed_rev);
                self.regions.owed_list.retain(|&x| !fwd[x as usize].is_empty() || !rev[x as usize].is_empty());
            }
            self.regions.owed_list.push(s);
        }
    }

    /// Apply every owed absorb now, before the compute of an evicted storage
    /// changes.
    ///
    /// Why. The reference absorbs at eviction time, adding the compute each
    /// absorbed storage has then; an owed absorb adds the compute it has
    /// when applied. The two agree while no evicted storage's compute
    /// changes, which happens only when an alias of an evicted storage is
    /// created (`Replay::compute_op`): so owed absorbs are applied just
    /// before, as stale regions are rebuilt (`flush`). (Found by an A/B run
    /// that settled absorbs at other times: Unrolled GAN at 0.15 of its
    /// peak with AbE chose a different victim at eviction 10,395.)
    pub(super) fn settle_owed(&mut self) {
        let mut list = std::mem::take(&mut self.regions.owed_list);
        for &s in &list {
            self.settle_regions(s);
        }
        list.clear();
        self.regions.owed_list = list;
    }

    /// Regions are read only while a storage can still be evicted: for a
    /// pinned (or retained) storage they would be written and never read.
    /// (Regions on: `Lazy::unused` is set where a storage is pinned.)
    #[inline]
    pub(super) fn regions_unused(&self, s: u32) -> bool {
        let si = s as usize;
        debug_assert_eq!(self.regions.lazy[si][0].unused, self.pinned[si] || self.retained[si]);
        debug_assert_eq!(self.regions.lazy[si][0].unused, self.for_good[si]);
        self.regions.lazy[si][0].unused
    }

    /// Whether the region of `s` in `dir` is owed the absorb of an evicted
    /// frontier storage: not when it is never read (`regions_unused`), nor
    /// when it is stale.
    ///
    /// Why a stale region may skip it. A stale region is read only after a
    /// rebuild (`ensure_exact`, `flush`, `exact_within`; the self-check
    /// flushes first), and a rebuild drops what it is owed, so an absorb
    /// owed to it would never be applied; meanwhile its key reads its bound
    /// (`stored_bound`), which stays a lower bound as an eviction only adds
    /// to a region (see `mark_stale`), so its key does not change either.
    /// In a thrashing replay most frontier regions are stale, and their
    /// lists grew for nothing (Inception-v4 at 0.20 of its peak: a twentieth
    /// of the replay in their reallocations).
    #[inline]
    pub(super) fn owes_absorbs(&self, s: u32, dir: Direction) -> bool {
        let lazy = &self.regions.lazy[s as usize][dir as usize];
        debug_assert_eq!(lazy.unused, self.regions_unused(s));
        !lazy.unused && !lazy.stale
    }

    /// What every way of renewing a region of `s` does besides the region
    /// itself: its key is renewed, it is no longer stale, and nothing owed
    /// to the old one applies.
    pub(super) fn renewing(&mut self, s: u32, dir: Direction) {
        self.touch(s);
        self.regions.lazy[s as usize][dir as usize].stale = false;
        match dir {
            Direction::Forward => self.regions.owed_fwd[s as usize].clear(),
            Direction::Reverse => self.regions.owed_rev[s as usize].clear(),
        }
    }

    pub(super) fn rebuild(&mut self, s: u32, dir: Direction) {
        self.renewing(s, dir);
        let g = GraphView { trace: self.trace, created: self.created, material: &self.material, compute: &self.compute, for_good: &self.for_good };
        let region = match dir {
            Direction::Forward => &mut self.regions.fwd[s as usize],
            Direction::Reverse => &mut self.regions.rev[s as usize],
        };
        region.rebuild(s, dir, &g, &mut self.marks, &mut self.walk);
        region.sums_at = self.regions.compute_changes;
    }

    /// Apply the absorbs owed to both regions of `s` before they are read.
    #[inline]
    pub(super) fn settle_regions(&mut self, s: u32) {
        self.settle_region(s, Direction::Forward);
        self.settle_region(s, Direction::Reverse);
    }

    /// Apply the absorbs owed to one region of `s` before it is read.
    pub(super) fn settle_region(&mut self, s: u32, dir: Direction) {
        let si = s as usize;
        let (owed, region) = match dir {
            Direction::Forward => (&mut self.regions.owed_fwd[si], &mut self.regions.fwd[si]),
            Direction::Reverse => (&mut self.regions.owed_rev[si], &mut self.regions.rev[si]),
        };
        if owed.is_empty() {
            return;
        }
        let mut list = std::mem::take(owed);
        // A take-over (no copy) first when it applies; the rest in one pass.
        if region.interior.is_empty() {
            let (x, reg) = list.remove(0);
            Self::absorb_owed(region, x, reg, self.regions.compute_changes, self.cfg.eager_regions, &self.compute, &mut self.marks);
        }
        match &list[..] {
            [] => {}
            [(x, reg)] => region.absorb(*x, reg, &self.compute, &mut self.marks),
            rest => region.absorb_all(rest, &self.compute, &mut self.marks, &mut self.marks2),
        }
        list.clear();
        // Keep the list's allocation for the next owed absorbs.
        let owed = match dir {
            Direction::Forward => &mut self.regions.owed_fwd[si],
            Direction::Reverse => &mut self.regions.owed_rev[si],
        };
        if owed.is_empty() {
            *owed = list;
        }
        self.touch(s);
    }

    /// Apply one owed absorb; a region of empty interior takes `x`'s region
    /// over (see `Region::take_over`) when nothing else holds it and its
    /// sums are current.
    fn absorb_owed(
        region: &mut Region,
        x: u32,
        reg: Rc<Region>,
        compute_changes: u64,
        eager: bool,
        compute: &[u64],
        marks: &mut crate::regions::Marks,
    ) {
        if !eager && region.interior.is_empty() && reg.sums_at == compute_changes && region.frontier.contains(&x) {
            match Rc::try_unwrap(reg) {
                Ok(whole) => region.take_over(x, whole, compute[x as usize], marks),
                Err(shared) => region.absorb(x, &shared, compute, marks),
            }
        } else {
            region.absorb(x, &reg, compute, marks);
        }
    }
}
