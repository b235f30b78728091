//! `Session`: the engine fed a command at a time, for `dtrlab.runtime`
//! (conversions only; the logic is `dtr_core::Session`).
//!
//! A session owns its trace (shared) and configuration, and the core's
//! session borrows them: `self_cell` keeps the three together. It holds
//! reference-counted regions, so it stays on the thread that made it
//! (`unsendable`: another thread gets an exception, never a crash). Its
//! calls are short and keep the GIL; a panic is still an exception.

use crate::{caught, Trace};
use dtr_core as core;
use pyo3::prelude::*;
use pyo3::intern;
use pyo3::types::{PyString, PyType};
use std::sync::Arc;

use crate::result::{Inputs, RunResult};

struct Owner {
    trace: Arc<core::Trace>,
    cfg: core::RunConfig,
}

type Live<'a> = core::Session<'a>;

self_cell::self_cell!(
    struct Cell {
        owner: Owner,
        #[not_covariant]
        dependent: Live,
    }
);

/// An event as a runtime performs it: `(kind, storage, tensor)`.
type Action = (u8, u32, u32);

/// What an event asks a runtime to do, as the event log names it.
const EVICT: u8 = 0;
const EAGER_EVICT: u8 = 1;
const REMAT: u8 = 2;

/// A replay of a trace in progress, fed by `advance`.
#[pyclass(unsendable, module = "dtrlab._engine")]
pub struct Session {
    cell: Cell,
    run: Option<Inputs>,
    /// Events already handed out by `advance`.
    delivered: usize,
    /// Nanoseconds spent in the core's `advance` and in copying out its new
    /// events (not in Python's call and conversions), for the runtime
    /// benchmark.
    #[pyo3(get)]
    core_ns: u64,
}

fn status_name(p: core::Progress) -> &'static str {
    match p {
        core::Progress::Running => "running",
        core::Progress::Ended(s) => s.name(),
    }
}

#[pymethods]
impl Session {
    /// A session over `trace`, configured as `Trace.simulate` is (events are
    /// always recorded: they are what a runtime performs).
    #[new]
    #[pyo3(signature = (trace, *, key, start, heuristic, cap, budget=None, ratio=None, seed=0, retain=Vec::new(), self_check=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        trace: &Trace,
        key: String,
        start: bool,
        heuristic: &str,
        cap: Option<f64>,
        budget: Option<u64>,
        ratio: Option<f64>,
        seed: u64,
        retain: Vec<u32>,
        self_check: bool,
    ) -> PyResult<Self> {
        let (_, mut cfg) = trace.config(py, heuristic, cap, budget, ratio, seed, retain)?;
        cfg.events = true;
        cfg.self_check = self_check;
        let owner = Owner { trace: trace.inner.clone(), cfg };
        let cell = caught(|| Cell::try_new(owner, |o| core::Session::new(&o.trace, &o.cfg)))?;
        let run = Inputs { trace: key, heuristic: heuristic.into(), ratio, cap, start, seed };
        Ok(Session { cell, run: Some(run), delivered: 0, core_ns: 0 })
    }

    /// The index of the next schedule command.
    #[getter]
    fn position(&self) -> usize {
        self.cell.with_dependent(|_, s| s.position())
    }

    /// Bytes resident by the engine's count.
    #[getter]
    fn memory(&self) -> u64 {
        self.cell.with_dependent(|_, s| s.memory())
    }

    /// The budget, or None.
    #[getter]
    fn budget(&self) -> Option<u64> {
        self.cell.borrow_owner().cfg.budget
    }

    /// Replay the commands up to (excluding) `end`. Returns the status
    /// (`running`, or `oom` / `thrashed` once the run has ended early) and the
    /// events since the last call, in order: `(kind, storage, tensor)` with
    /// kind 0 = evict, 1 = evict on release, 2 = rematerialize `tensor`.
    fn advance<'py>(&mut self, py: Python<'py>, end: usize) -> PyResult<(Bound<'py, PyString>, Vec<Action>)> {
        let delivered = self.delivered;
        let t0 = std::time::Instant::now();
        let (progress, new) = caught(|| {
            self.cell.with_dependent_mut(|_, s| {
                let p = s.advance(end)?;
                let log = s.events().expect("a session records events");
                let new = (delivered..log.len())
                    .map(|i| {
                        let kind = match log.kind[i] {
                            core::EventKind::Evict => EVICT,
                            core::EventKind::EagerEvict => EAGER_EVICT,
                            core::EventKind::Remat => REMAT,
                        };
                        (kind, log.storage[i], log.tensor[i])
                    })
                    .collect::<Vec<_>>();
                Ok((p, new))
            })
        })?;
        self.core_ns += t0.elapsed().as_nanos() as u64;
        self.delivered += new.len();
        // Interned: a call an operator, most with nothing to perform.
        let status = match progress {
            core::Progress::Running => intern!(py, "running").clone(),
            ended => PyString::new(py, status_name(ended)),
        };
        Ok((status, new))
    }

    /// Add `offset` bytes (measured less the engine's count) to every
    /// budget check from now on.
    fn set_memory_offset(&mut self, offset: i64) {
        self.cell.with_dependent_mut(|_, s| s.set_memory_offset(offset));
    }

    /// Whether storage `storage` is resident.
    fn resident(&self, storage: u32) -> bool {
        self.cell.with_dependent(|_, s| s.resident(storage))
    }

    /// Whether storage `storage` is pinned or retained (never evicted again).
    fn kept_for_good(&self, storage: u32) -> bool {
        self.cell.with_dependent(|_, s| s.kept_for_good(storage))
    }

    /// The trace names still referring to storage `storage`.
    fn external_refs(&self, storage: u32) -> u64 {
        self.cell.with_dependent(|_, s| s.external_refs(storage))
    }

    /// The result (an instance of `result_type`), once the whole schedule is
    /// replayed or the run ended early; the session is done after it.
    fn finish<'py>(&mut self, py: Python<'py>, result_type: &Bound<'py, PyType>) -> PyResult<Bound<'py, PyAny>> {
        let r = caught(|| self.cell.with_dependent_mut(|_, s| s.finish()))?;
        let run = self.run.take().expect("finish succeeds once");
        let trace = self.cell.borrow_owner().trace.clone();
        RunResult::native(py, run, &r, &trace)?.into_instance(result_type)
    }
}
