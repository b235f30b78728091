//! An optional log of every eviction and rematerialization, kept columnar so
//! the Python side can hand it to Arrow/pandas without per-row objects.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// Chosen by the heuristic to make room.
    Evict,
    /// Evicted because its last reference was released.
    EagerEvict,
    /// A rematerialization (an operator rerun for an evicted tensor).
    Remat,
}

impl EventKind {
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Evict => "evict",
            EventKind::EagerEvict => "eager_evict",
            EventKind::Remat => "remat",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct EventLog {
    pub kind: Vec<EventKind>,
    /// 1-based index of the model operator being run (constants included).
    pub model_op: Vec<u64>,
    /// Materialize nesting depth (0 = outside any operator, 1 = model operator).
    pub depth: Vec<u32>,
    pub storage: Vec<u32>,
    /// The tensor rematerialized (for evictions: the storage's root tensor).
    pub tensor: Vec<u32>,
    /// Bytes evicted, or bytes the rerun operator allocated.
    pub size: Vec<u64>,
    /// Pinned bytes right after the event.
    pub pinned: Vec<u64>,
    pub clock: Vec<u64>,
    /// Why each eviction chose its victim, one entry an event (`None` for
    /// eager evictions and rematerializations); kept only when asked for
    /// (`RunConfig::explain`).
    pub decisions: Option<Vec<Option<Decision>>>,
}

/// One candidate as the heuristic scored it: the score and the terms it is
/// made of. A term the heuristic does not read is `None` (all of them for
/// `RandomStorage`, which has no score; `LRU` scores the last access alone).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Scored {
    pub storage: u32,
    pub score: Option<f64>,
    /// The cost term, summed from the parts below as the heuristic sums it.
    pub cost: Option<i128>,
    /// Own compute, and the compute of the evicted neighbourhood: the
    /// forward and reverse regions, or the equivalence classes' values.
    pub own: Option<i128>,
    pub forward: Option<i128>,
    pub reverse: Option<i128>,
    pub classes: Option<i128>,
    pub size: u64,
    /// Clock minus last access; `None` when never accessed (infinite).
    pub staleness: Option<u64>,
}

/// An eviction's decision: the victim, and the candidate the rule would
/// have chosen without it (none when the victim was the only candidate).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Decision {
    pub victim: Scored,
    pub runner_up: Option<Scored>,
    /// Candidates in the pool when the choice was made.
    pub candidates: u64,
}

impl EventLog {
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        kind: EventKind,
        model_op: u64,
        depth: u32,
        storage: u32,
        tensor: u32,
        size: u64,
        pinned: u64,
        clock: u64,
    ) {
        self.kind.push(kind);
        self.model_op.push(model_op);
        self.depth.push(depth);
        self.storage.push(storage);
        self.tensor.push(tensor);
        self.size.push(size);
        self.pinned.push(pinned);
        self.clock.push(clock);
        if let Some(d) = self.decisions.as_mut() {
            d.push(None);
        }
    }

    /// A log that also keeps every eviction's decision.
    pub fn explaining() -> Self {
        EventLog { decisions: Some(Vec::new()), ..EventLog::default() }
    }

    /// Attach `decision` to the last event pushed (kept only when explaining).
    pub fn explain_last(&mut self, decision: Decision) {
        if let Some(last) = self.decisions.as_mut().and_then(|d| d.last_mut()) {
            *last = Some(decision);
        }
    }

    pub fn len(&self) -> usize {
        self.kind.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kind.is_empty()
    }

    /// `(model_op, storage)` of every eviction, eager ones included, in order.
    pub fn eviction_sequence(&self) -> Vec<(u64, u32)> {
        (0..self.len())
            .filter(|&i| self.kind[i] != EventKind::Remat)
            .map(|i| (self.model_op[i], self.storage[i]))
            .collect()
    }
}
