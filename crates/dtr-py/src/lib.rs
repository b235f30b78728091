//! Python bindings of dtr-core: conversions only, no simulation logic.
//!
//! Every engine call releases the GIL (so Python threads replay in parallel)
//! and runs under `catch_unwind`, so an engine bug surfaces as
//! `dtrlab.EngineError` instead of aborting the interpreter.

use dtr_core as core;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyType};
use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

mod result;
mod session;
use result::RunResult;

/// The system allocator, counting the bytes this extension holds, so a
/// replay can stop at a memory limit instead of having an allocation refused
/// (which aborts the interpreter).
struct Counting;

static HELD: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            HELD.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            HELD.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        HELD.fetch_sub(layout.size() as u64, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            HELD.fetch_add(new_size as u64, Ordering::Relaxed);
            HELD.fetch_sub(layout.size() as u64, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn held_bytes() -> u64 {
    HELD.load(Ordering::Relaxed)
}

/// The limit when the caller sets none: what the engine holds now plus half
/// of what the process may still take (the smaller of the address-space
/// limit's headroom, less the threads' malloc arenas, and the memory
/// available), so that even a doubling
/// reallocation is still granted when the check stops the replay. None
/// where neither can be read (not Linux).
fn default_memory_limit() -> Option<u64> {
    let field = |text: &str, key: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        line[key.len()..].split_whitespace().next()?.parse().ok()
    };
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let available = read("/proc/meminfo").and_then(|t| field(&t, "MemAvailable:")).map(|kb| kb * 1024);
    let headroom = (|| {
        let limits = read("/proc/self/limits")?;
        let max = field(&limits, "Max address space")?; // "unlimited" does not parse
        let size = field(&read("/proc/self/status")?, "VmSize:")? * 1024;
        // Each thread that allocates (the parser decodes on every core) gets
        // its own malloc arena, which reserves 64 MiB of address space.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
        Some(max.saturating_sub(size).saturating_sub(threads * (64 << 20)))
    })();
    let free = match (available, headroom) {
        (Some(a), Some(h)) => a.min(h),
        (a, h) => a.or(h)?,
    };
    Some(held_bytes() + free / 2)
}

/// The guard of one engine call: the caller's limit, else the default.
fn memory_guard(memory_limit: Option<u64>, hint: &'static str) -> Option<core::MemoryGuard> {
    memory_limit.or_else(default_memory_limit).map(|limit| core::MemoryGuard { used: held_bytes, limit, hint })
}

create_exception!(_engine, TraceError, PyValueError, "A trace file is malformed (names the file and line).");
create_exception!(_engine, EngineError, PyRuntimeError, "The engine cannot perform a request.");

pub(crate) fn to_py_err(e: core::EngineError) -> PyErr {
    match e {
        core::EngineError::Trace(t) => TraceError::new_err(t.to_string()),
        core::EngineError::InvalidArgument(m) => PyValueError::new_err(m),
        other => EngineError::new_err(other.to_string()),
    }
}

/// An engine call's outcome: its error mapped, a panic made `EngineError`.
fn unwound<T>(out: std::thread::Result<Result<T, core::EngineError>>) -> PyResult<T> {
    match out {
        Ok(r) => r.map_err(to_py_err),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(EngineError::new_err(format!("internal engine error (please report): {msg}")))
        }
    }
}

/// Run `f` without the GIL; a panic becomes `EngineError`.
fn guarded<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, core::EngineError> + Send) -> PyResult<T> {
    unwound(py.allow_threads(|| catch_unwind(AssertUnwindSafe(f))))
}

/// Run `f` keeping the GIL (a short call); a panic becomes `EngineError`.
pub(crate) fn caught<T>(f: impl FnOnce() -> Result<T, core::EngineError>) -> PyResult<T> {
    unwound(catch_unwind(AssertUnwindSafe(f)))
}

/// A parsed trace, shared by every replay; its baseline is computed once.
#[pyclass(frozen, module = "dtrlab._engine")]
pub(crate) struct Trace {
    pub(crate) inner: Arc<core::Trace>,
    baseline: OnceLock<core::Baseline>,
}

impl Trace {
    fn baseline_of(&self, py: Python<'_>) -> PyResult<core::Baseline> {
        if let Some(b) = self.baseline.get() {
            return Ok(*b);
        }
        let t = self.inner.clone();
        let b = guarded(py, move || core::baseline(&t))?;
        Ok(*self.baseline.get_or_init(|| b))
    }

    /// A replay's configuration from the API's arguments, and its budget
    /// (no events, no checks, no memory guard: the caller's to set).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn config(
        &self,
        py: Python<'_>,
        heuristic: &str,
        cap: Option<f64>,
        budget: Option<u64>,
        ratio: Option<f64>,
        seed: u64,
        retain: Vec<u32>,
    ) -> PyResult<(Option<u64>, core::RunConfig)> {
        let h = core::Heuristic::from_name(heuristic).ok_or_else(|| {
            let names: Vec<&str> = core::HEURISTIC_NAMES.iter().map(|(n, _)| *n).collect();
            PyValueError::new_err(format!("unknown heuristic {heuristic:?}; choose one of {}", names.join(", ")))
        })?;
        let base = self.baseline_of(py)?;
        let budget = match (budget, ratio) {
            (Some(_), Some(_)) => return Err(PyValueError::new_err("give budget or ratio, not both")),
            (Some(b), None) => Some(b),
            (None, Some(r)) => Some(core::budget_for_ratio(base.peak, r).map_err(to_py_err)?),
            (None, None) => None,
        };
        let cfg = core::RunConfig {
            budget,
            heuristic: h,
            remat_limit: core::remat_limit(base.compute, cap).map_err(to_py_err)?,
            seed,
            retain,
            events: false,
            self_check: false,
            eager_regions: false,
            explain: false,
            tree_from: core::TREE_FROM,
            memory: None,
        };
        Ok((budget, cfg))
    }
}

#[pymethods]
impl Trace {
    /// Parse a trace given as text (`str`) or as the file's bytes (`bytes`,
    /// read without a copy; invalid UTF-8 is a `TraceError` naming the line);
    /// `source` names it in error messages. Past `memory_limit` bytes held by
    /// the engine (default as for `simulate`) the parse stops with `EngineError`.
    #[staticmethod]
    #[pyo3(signature = (text, source, start=false, memory_limit=None))]
    fn parse(
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        source: String,
        start: bool,
        memory_limit: Option<u64>,
    ) -> PyResult<Self> {
        let guard = memory_guard(memory_limit, " or parse a smaller trace");
        let data = if let Ok(b) = text.downcast::<PyBytes>() {
            b.as_bytes()
        } else if let Ok(s) = text.downcast::<PyString>() {
            s.to_str()?.as_bytes()
        } else {
            return Err(PyTypeError::new_err("a trace is given as str or bytes"));
        };
        let trace = guarded(py, move || core::parse_trace_bytes_within(&source, data, start, guard))?;
        Ok(Trace { inner: Arc::new(trace), baseline: OnceLock::new() })
    }

    #[getter]
    fn source(&self) -> String {
        self.inner.source.clone()
    }

    #[getter]
    fn n_ops(&self) -> usize {
        self.inner.ops.len()
    }

    #[getter]
    fn n_tensors(&self) -> usize {
        self.inner.tensors.len()
    }

    #[getter]
    fn n_commands(&self) -> usize {
        self.inner.schedule.len()
    }

    /// Name in the trace of tensor `tensor_id`.
    fn tensor_name(&self, tensor_id: usize) -> PyResult<String> {
        if tensor_id < self.inner.tensors.len() {
            Ok(self.inner.tensor_name(tensor_id as u32).to_string())
        } else {
            Err(PyValueError::new_err(format!("no tensor {tensor_id}")))
        }
    }

    /// Storage (root tensor id) of tensor `tensor_id`.
    fn storage_of(&self, tensor_id: usize) -> PyResult<u32> {
        self.inner
            .tensors
            .get(tensor_id)
            .map(|t| t.storage)
            .ok_or_else(|| PyValueError::new_err(format!("no tensor {tensor_id}")))
    }

    /// Unique operator name (`"<name>/<k>"`) of the operator producing `tensor_id`.
    fn op_name_of(&self, tensor_id: usize) -> PyResult<String> {
        self.inner
            .tensors
            .get(tensor_id)
            .map(|t| self.inner.op_name(t.op))
            .ok_or_else(|| PyValueError::new_err(format!("no tensor {tensor_id}")))
    }

    /// Size in bytes of storage `storage_id`.
    fn storage_size(&self, storage_id: usize) -> PyResult<u64> {
        match self.inner.tensors.get(storage_id) {
            Some(t) if t.storage as usize == storage_id => Ok(t.size),
            _ => Err(PyValueError::new_err(format!("{storage_id} is not a storage id"))),
        }
    }

    /// The schedule as columns: `(kind, argument, line)` per command (kind
    /// 0 = compute operator `argument`, 1 = take a reference to tensor
    /// `argument`, 2 = materialize and pin it, 3 = release it), and how many
    /// commands the trace's lines make (the rest pin what is kept at the end).
    fn schedule_table(&self) -> (Vec<u8>, Vec<u32>, Vec<usize>, usize) {
        let t = &self.inner;
        let (kinds, args) = t
            .schedule
            .iter()
            .map(|c| match *c {
                core::trace::Command::Compute(op) => (0u8, op),
                core::trace::Command::Get { tensor, pin: false } => (1, tensor),
                core::trace::Command::Get { tensor, pin: true } => (2, tensor),
                core::trace::Command::Release(tensor) => (3, tensor),
            })
            .unzip();
        (kinds, args, t.schedule_lines.clone(), t.body_commands)
    }

    /// The operators as columns: first output, number of outputs, constant or not.
    fn op_table(&self) -> (Vec<u32>, Vec<u32>, Vec<bool>) {
        let ops = &self.inner.ops;
        (
            ops.iter().map(|o| o.first_output).collect(),
            ops.iter().map(|o| o.n_outputs).collect(),
            ops.iter().map(|o| o.is_constant).collect(),
        )
    }

    /// The tensors as columns: storage (root tensor id), and bytes (0 for an alias).
    fn tensor_table(&self) -> (Vec<u32>, Vec<u64>) {
        let ts = &self.inner.tensors;
        (ts.iter().map(|t| t.storage).collect(), ts.iter().map(|t| t.size).collect())
    }

    /// Every tensor's name in the trace, by tensor id.
    fn tensor_names(&self) -> Vec<String> {
        (0..self.inner.tensors.len()).map(|t| self.inner.tensor_name(t as u32).to_string()).collect()
    }

    /// The input tensors of operator `op`, in argument order.
    fn op_inputs(&self, op: usize) -> PyResult<Vec<u32>> {
        if op < self.inner.ops.len() {
            Ok(self.inner.op_inputs.get(op as u32).to_vec())
        } else {
            Err(PyValueError::new_err(format!("no operator {op}")))
        }
    }

    /// `{"peak", "compute", "const", "bottleneck"}` of the infinite-budget run.
    fn baseline<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let b = self.baseline_of(py)?;
        let d = PyDict::new(py);
        d.set_item("peak", b.peak)?;
        d.set_item("compute", b.compute)?;
        d.set_item("const", b.const_bytes)?;
        d.set_item("bottleneck", b.bottleneck)?;
        Ok(d)
    }

    /// Replay under a byte budget (or a ratio of the baseline peak) and return
    /// the result as an instance of `result_type` (`RunResult` or a subclass),
    /// labelled with the caller's trace `key` and `start`.
    /// The heuristic and the cap have no defaults here: they are the
    /// configuration's (`dtrlab.engine.DEFAULT_HEURISTIC`, `DEFAULT_CAP`).
    #[pyo3(signature = (result_type, *, key, start, heuristic, cap, budget=None, ratio=None, seed=0, retain=Vec::new(), events=false, explain=false, self_check=false, eager_regions=false, memory_limit=None))]
    #[allow(clippy::too_many_arguments)]
    fn simulate<'py>(
        &self,
        py: Python<'py>,
        result_type: &Bound<'py, PyType>,
        key: String,
        start: bool,
        heuristic: &str,
        cap: Option<f64>,
        budget: Option<u64>,
        ratio: Option<f64>,
        seed: u64,
        retain: Vec<u32>,
        events: bool,
        explain: bool,
        self_check: bool,
        eager_regions: bool,
        memory_limit: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (_, mut cfg) = self.config(py, heuristic, cap, budget, ratio, seed, retain)?;
        // Decisions are kept in the event log: explaining records events.
        cfg.events = events || explain;
        cfg.explain = explain;
        cfg.self_check = self_check;
        cfg.eager_regions = eager_regions;
        cfg.memory = memory_guard(memory_limit, " or ask for less (events=False, a cap on the overhead)");
        let t = self.inner.clone();
        let r = guarded(py, move || core::simulate(&t, &cfg))?;
        let run = result::Inputs { trace: key, heuristic: heuristic.into(), ratio, cap, start, seed };
        RunResult::native(py, run, &r, &self.inner)?.into_instance(result_type)
    }
}

/// Every heuristic with its terms: `(name, cost, size, staleness, random)`.
#[pyfunction]
fn heuristic_catalogue() -> Vec<(&'static str, &'static str, bool, bool, bool)> {
    core::HEURISTIC_NAMES
        .iter()
        .map(|(n, h)| {
            let t = h.terms();
            (*n, t.cost, t.size, t.staleness, t.random)
        })
        .collect()
}

/// `int(peak * ratio)`, exactly as the reference computes a budget.
#[pyfunction]
fn budget_for_ratio(peak: u64, ratio: f64) -> PyResult<u64> {
    core::budget_for_ratio(peak, ratio).map_err(to_py_err)
}

/// For tests of the panic guard only: panics inside the engine boundary.
#[pyfunction]
fn _panic_for_test(py: Python<'_>) -> PyResult<()> {
    guarded(py, || -> Result<(), core::EngineError> { panic!("deliberate test panic") })
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Trace>()?;
    m.add_class::<RunResult>()?;
    m.add_class::<session::Session>()?;
    m.add_function(wrap_pyfunction!(heuristic_catalogue, m)?)?;
    m.add_function(wrap_pyfunction!(budget_for_ratio, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add("TraceError", m.py().get_type::<TraceError>())?;
    m.add("EngineError", m.py().get_type::<EngineError>())?;
    m.add("ENGINE_VERSION", core::ENGINE_VERSION)?;
    Ok(())
}
