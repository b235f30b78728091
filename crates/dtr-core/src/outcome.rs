//! What a replay reports.

use crate::events::EventLog;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Ok,
    /// The evictable pool ran dry while an operator needed room.
    Oom,
    /// Rematerialization compute passed the overhead cap.
    Thrashed,
}

impl RunStatus {
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Oom => "oom",
            RunStatus::Thrashed => "thrashed",
        }
    }
}

/// The state at an out-of-memory failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail {
    pub pinned: u64,
    pub request: u64,
    pub depth: u32,
    pub over_by: u64,
    pub model_op: u64,
    /// The tensor whose materialization was requested last (the reference's
    /// records name this one; after a nested rematerialization has returned it
    /// is a parent of the tensor being computed).
    pub tensor_id: u32,
    pub tensor_name: String,
    /// The tensor whose operator needed the memory.
    pub computing: u32,
    /// Every resident storage that no eviction could free at the failure:
    /// `(storage id, bytes, pinned for good)`; the others are locked by a
    /// materialization in progress. By storage id.
    pub held: Vec<(u32, u64, bool)>,
}

#[derive(Debug, Clone)]
pub struct RunResult {
    pub status: RunStatus,
    pub budget: Option<u64>,
    pub clock: u64,
    pub model_compute: u64,
    pub remat_compute: u64,
    pub max_memory: u64,
    pub evictions: u64,
    /// `(storage id, times evicted)` for every storage evicted, by id.
    pub evicted_ids: Vec<(u32, u32)>,
    pub heuristic_eval_count: u64,
    pub peak_pinned: u64,
    pub depth_at_peak_pinned: u32,
    pub max_nesting_depth: u32,
    pub model_ops: u64,
    pub fail: Option<Fail>,
    /// Largest `memory + request` that fitted (the interval's low end).
    pub identical_budget_lo: Option<u64>,
    /// Smallest `memory + request` that did not fit, minus one.
    pub identical_budget_hi: Option<u64>,
    pub bottleneck: u64,
    pub const_bytes: u64,
    pub events: Option<EventLog>,
}

impl RunResult {
    pub fn distinct_evicted(&self) -> u64 {
        self.evicted_ids.len() as u64
    }

    pub fn evictions_per_storage(&self) -> f64 {
        if self.evicted_ids.is_empty() {
            0.0
        } else {
            self.evictions as f64 / self.evicted_ids.len() as f64
        }
    }

    /// (model + remat) / model, for ok runs (the papers' definition).
    pub fn overhead(&self) -> Option<f64> {
        (self.status == RunStatus::Ok && self.model_compute > 0)
            .then(|| crate::ratio::div_round((self.model_compute + self.remat_compute) as u128, self.model_compute as u128))
    }

    /// clock / model compute, for ok runs (the reference's plotting definition).
    pub fn overhead_clock(&self) -> Option<f64> {
        (self.status == RunStatus::Ok && self.model_compute > 0)
            .then(|| crate::ratio::div_round(self.clock as u128, self.model_compute as u128))
    }
}
