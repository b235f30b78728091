//! What a replay reports besides its clock: pinned-byte samples, the
//! storages held at an OOM, the self-check, and the final result.

use super::lazy_regions::Eager;
use super::{Replay, Stop};
use crate::error::EngineError;
use crate::outcome::{RunResult, RunStatus};
use crate::regions::{Direction, GraphView, Region};

impl Replay<'_> {
    pub(super) fn sample_pinned(&mut self, depth: u32) {
        let pinned = self.pinned_bytes();
        if pinned > self.counters.peak_pinned {
            self.counters.peak_pinned = pinned;
            self.counters.depth_at_peak_pinned = depth;
        }
    }

    /// Resident storages outside the evictable pool (or retained in it).
    pub(super) fn held_storages(&self) -> Vec<(u32, u64, bool)> {
        (0..self.created)
            .filter(|&s| {
                let si = s as usize;
                self.trace.tensors[si].storage == s
                    && self.material[si]
                    && (!self.pool.contains(s) || self.retained[si])
            })
            .map(|s| (s, self.trace.storage_size(s), self.pinned[s as usize]))
            .collect()
    }

    pub(super) fn check_invariants(&mut self) -> Result<(), EngineError> {
        if self.regions_on {
            self.flush(Eager::All);
            for s in 0..self.created {
                self.settle_regions(s);
            }
        }
        let bad = |m: String| Err(EngineError::Invariant(m));
        let n = self.trace.tensors.len();
        let mut pool_bytes = 0u64;
        for s in 0..n as u32 {
            if self.trace.tensors[s as usize].storage != s || s >= self.created {
                continue;
            }
            let si = s as usize;
            let expect = self.material[si] && self.ref_int[si] == 0 && !self.pinned[si];
            if self.pool.contains(s) != expect {
                return bad(format!("storage {s}: in pool = {}, expected {expect}", self.pool.contains(s)));
            }
            if self.pool.contains(s) && !self.retained[si] {
                pool_bytes += self.trace.storage_size(s);
            }
            if self.regions_on && self.material[si] && !self.regions_unused(s) {
                for dir in [Direction::Forward, Direction::Reverse] {
                    let mut fresh = Region::default();
                    let g = GraphView { trace: self.trace, created: self.created, material: &self.material, compute: &self.compute, for_good: &self.for_good };
                    fresh.rebuild(s, dir, &g, &mut self.marks, &mut self.walk);
                    let kept = match dir {
                        Direction::Forward => &self.regions.fwd[si],
                        Direction::Reverse => &self.regions.rev[si],
                    };
                    // A frontier built before one of its storages was pinned
                    // still holds it; no reader needs it (see `GraphView::for_good`).
                    let for_good = &self.for_good;
                    let same = |a: &mut dyn Iterator<Item = &u32>, b: &mut dyn Iterator<Item = &u32>| {
                        let keep = |x: &u32| !for_good[*x as usize];
                        let (mut a, mut b): (Vec<u32>, Vec<u32>) = (a.copied().filter(keep).collect(), b.copied().filter(keep).collect());
                        a.sort_unstable();
                        b.sort_unstable();
                        a == b
                    };
                    if kept.compute != fresh.compute
                        || !same(&mut kept.interior.iter(), &mut fresh.interior.iter())
                        || !same(&mut kept.frontier.iter(), &mut fresh.frontier.iter())
                    {
                        return bad(format!(
                            "storage {s}: {dir:?} region (compute {}) differs from a rebuild (compute {})",
                            kept.compute, fresh.compute
                        ));
                    }
                }
            }
        }
        if pool_bytes != self.evictable_bytes {
            return bad(format!("pool bytes {} but counter says {}", pool_bytes, self.evictable_bytes));
        }
        Ok(())
    }

    pub(super) fn finish(&mut self, stop: Option<Stop>) -> Result<RunResult, EngineError> {
        let (status, fail) = match stop {
            None => (RunStatus::Ok, None),
            Some(Stop::Oom(f)) => (RunStatus::Oom, Some(f)),
            Some(Stop::Thrashed) => (RunStatus::Thrashed, None),
            Some(Stop::Error(e)) => return Err(e),
        };
        let evicted_ids: Vec<(u32, u32)> = self
            .evict_count
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(s, &c)| (s as u32, c))
            .collect();
        Ok(RunResult {
            status,
            budget: self.cfg.budget,
            clock: self.clock,
            model_compute: self.counters.model_compute,
            remat_compute: self.counters.remat_compute,
            max_memory: self.counters.max_memory,
            evictions: self.counters.evictions,
            evicted_ids,
            heuristic_eval_count: self.counters.heuristic_evals,
            peak_pinned: self.counters.peak_pinned,
            depth_at_peak_pinned: self.counters.depth_at_peak_pinned,
            max_nesting_depth: self.counters.max_depth,
            model_ops: self.counters.model_ops,
            fail,
            identical_budget_lo: self.counters.fit_max,
            identical_budget_hi: self.counters.nofit_min.map(|u| u - 1),
            bottleneck: self.counters.bottleneck,
            const_bytes: self.counters.const_bytes,
            events: self.events.take(),
        })
    }
}
