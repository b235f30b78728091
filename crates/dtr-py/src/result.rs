//! The result of a replay, as one frozen Python class (`_engine.RunResult`).
//!
//! Both engines build it: the native one here (`RunResult::native`), the
//! reference adapter (`dtrlab/reference.py`) through the keyword constructor.
//! `dtrlab.engine.SimResult` subclasses it with the Python conveniences
//! (event tables, digest), so every field is declared once, below.
//!
//! Adding a field: one line in the `result_class!` call, one in
//! `RunResult::native` (the struct literal fails to compile without it), and
//! one in `python/dtrlab/_engine.pyi` (tests/test_result_class.py checks the
//! stub against `RunResult.FIELDS`).

use dtr_core as core;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple, PyType};
use pyo3::IntoPyObjectExt;

/// Writes the class from its field lists: the struct (a getter per field),
/// the keyword-only constructor, the field names in order, and the methods
/// that go through every field. A macro because PyO3 needs each name several
/// times (struct, constructor signature, names) and they must not drift.
/// Methods that name particular fields follow the lists (PyO3 takes one
/// `#[pymethods]` block per class, so they are spliced into it).
macro_rules! result_class {
    (
        run { $($run:ident: $run_ty:ty,)* }
        record { $($rec:ident: $rec_ty:ty,)* }
        beside { $($other:ident: $other_ty:ty,)* }
        methods { $($methods:tt)* }
    ) => {
        /// One replay: what was run (`RUN_FIELDS`), what it did (the golden
        /// record, `RECORD_FIELDS`), and beside the record the evicted
        /// storages and the event log. Immutable; built by keyword only.
        #[pyclass(frozen, subclass, weakref, get_all, module = "dtrlab._engine")]
        pub struct RunResult {
            $($run: $run_ty,)*
            $($rec: $rec_ty,)*
            $($other: $other_ty,)*
        }

        impl RunResult {
            /// Every field as `(name, value)`, in `FIELDS` order.
            fn items<'py>(&self, py: Python<'py>) -> PyResult<Vec<(&'static str, Bound<'py, PyAny>)>> {
                Ok(vec![
                    $((stringify!($run), (&self.$run).into_bound_py_any(py)?),)*
                    $((stringify!($rec), (&self.$rec).into_bound_py_any(py)?),)*
                    $((stringify!($other), (&self.$other).into_bound_py_any(py)?),)*
                ])
            }

            /// Every field's value, in `FIELDS` order.
            fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
                PyTuple::new(py, self.items(py)?.into_iter().map(|(_, v)| v))
            }

            /// Every field by name: the constructor's keyword arguments.
            fn kwargs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
                let d = PyDict::new(py);
                for (k, v) in self.items(py)? {
                    d.set_item(k, v)?;
                }
                Ok(d)
            }

            /// The record's fields into `d`, in order, tuples as lists (the
            /// shape of the golden records' JSON).
            fn record_into(&self, d: &Bound<'_, PyDict>) -> PyResult<()> {
                let py = d.py();
                $(
                    let v = (&self.$rec).into_bound_py_any(py)?;
                    match v.downcast::<PyTuple>() {
                        Ok(t) => d.set_item(stringify!($rec), t.to_list())?,
                        Err(_) => d.set_item(stringify!($rec), v)?,
                    }
                )*
                Ok(())
            }
        }

        #[pymethods]
        impl RunResult {
            /// Every field by keyword (a missing or unknown one is a TypeError).
            #[new]
            #[pyo3(signature = (*, $($run,)* $($rec,)* $($other,)*))]
            #[allow(clippy::too_many_arguments)]
            fn new($($run: $run_ty,)* $($rec: $rec_ty,)* $($other: $other_ty,)*) -> Self {
                Self { $($run,)* $($rec,)* $($other,)* }
            }

            /// Every field's name, in order (the constructor's keywords).
            #[classattr]
            #[allow(non_snake_case)]
            fn FIELDS(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
                PyTuple::new(py, [$(stringify!($run),)* $(stringify!($rec),)* $(stringify!($other),)*])
            }

            /// What the run was: set by the caller, not by the engine.
            #[classattr]
            #[allow(non_snake_case)]
            fn RUN_FIELDS(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
                PyTuple::new(py, [$(stringify!($run),)*])
            }

            /// The golden record's fields, in its order (`to_dict`'s).
            #[classattr]
            #[allow(non_snake_case)]
            fn RECORD_FIELDS(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
                PyTuple::new(py, [$(stringify!($rec),)*])
            }

            /// Equal when of the same class with equal fields (as a
            /// dataclass compares).
            fn __eq__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
                let py = slf.py();
                if !other.get_type().is(&slf.get_type()) {
                    return Ok(py.NotImplemented());
                }
                let other = other.downcast::<Self>()?;
                slf.get().values(py)?.eq(other.get().values(py)?)?.into_py_any(py)
            }

            /// The hash of every field (a TypeError when one is a dict, as
            /// a frozen dataclass's).
            fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
                self.values(py)?.hash()
            }

            /// `Class(field=value, ...)` for what was run and the record.
            fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
                let beside = [$(stringify!($other)),*];
                let mut parts = Vec::new();
                for (k, v) in slf.get().items(slf.py())? {
                    if !beside.contains(&k) {
                        parts.push(format!("{k}={}", v.repr()?));
                    }
                }
                Ok(format!("{}({})", slf.get_type().qualname()?, parts.join(", ")))
            }

            /// Pickling and copying rebuild through the keyword constructor.
            fn __getnewargs_ex__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyTuple>, Bound<'py, PyDict>)> {
                Ok((PyTuple::empty(py), self.kwargs(py)?))
            }

            $($methods)*
        }
    };
}

result_class! {
    run {
        trace: String,
        heuristic: String,
        ratio: Option<f64>,
        cap: Option<f64>,
        start: bool,
        seed: u64,
        engine: String,
    }
    record {
        status: String,
        budget: Option<u64>,
        clock: u64,
        model_compute: u64,
        remat_compute: u64,
        overhead: Option<f64>,
        overhead_clock: Option<f64>,
        max_memory: u64,
        evictions: u64,
        distinct_evicted: u64,
        evictions_per_storage: f64,
        heuristic_eval_count: u64,
        peak_pinned: u64,
        depth_at_peak_pinned: u32,
        max_nesting_depth: u32,
        model_ops: u64,
        // The failure's figures (a dict, None unless oom): open-ended, so
        // kept as the dict both engines build.
        fail: Option<Py<PyDict>>,
        identical_budget_interval: Option<(Option<u64>, Option<u64>)>,
    }
    beside {
        // ((storage id, times evicted), ...) by storage id; Python objects,
        // built once, so reading them never copies.
        evicted_ids: Py<PyTuple>,
        // Column name -> list, or None unless events were recorded.
        events_columns: Option<Py<PyDict>>,
    }
    methods {
        /// The golden record: what was run (the seed only where it changes
        /// the result), then the record's fields; `evicted_ids` on request.
        #[pyo3(signature = (evicted_ids=false))]
        fn to_dict<'py>(&self, py: Python<'py>, evicted_ids: bool) -> PyResult<Bound<'py, PyDict>> {
            let d = PyDict::new(py);
            d.set_item("trace", &self.trace)?;
            d.set_item("heuristic", &self.heuristic)?;
            d.set_item("ratio", self.ratio)?;
            d.set_item("cap", self.cap)?;
            d.set_item("start", self.start)?;
            self.record_into(&d)?;
            if core::Heuristic::from_name(&self.heuristic).is_some_and(|h| h.terms().random) {
                d.set_item("seed", self.seed)?;
            }
            if evicted_ids {
                let ids = self.evicted_ids.bind(py).iter().map(|x| x.downcast_into::<PyTuple>().map(|t| t.to_list()));
                d.set_item("evicted_ids", PyList::new(py, ids.collect::<Result<Vec<_>, _>>()?)?)?;
            }
            Ok(d)
        }
    }
}

/// What a native replay was, as its caller names it.
pub struct Inputs {
    pub trace: String,
    pub heuristic: String,
    pub ratio: Option<f64>,
    pub cap: Option<f64>,
    pub start: bool,
    pub seed: u64,
}

impl RunResult {
    /// The result of a native replay of `t`.
    pub fn native(py: Python<'_>, run: Inputs, r: &core::RunResult, t: &core::Trace) -> PyResult<Self> {
        let fail = match &r.fail {
            None => None,
            Some(f) => {
                let fd = PyDict::new(py);
                fd.set_item("pinned", f.pinned)?;
                fd.set_item("request", f.request)?;
                fd.set_item("depth", f.depth)?;
                fd.set_item("over_by", f.over_by)?;
                fd.set_item("model_op", f.model_op)?;
                fd.set_item("tensor_id", f.tensor_id)?;
                fd.set_item("tensor_name", &f.tensor_name)?;
                let computing = &t.tensors[f.computing as usize];
                fd.set_item("computing_tensor_id", f.computing)?;
                fd.set_item("computing_tensor_name", t.tensor_name(f.computing))?;
                fd.set_item("computing_op_name", t.op_name(computing.op))?;
                fd.set_item("held", &f.held)?;
                Some(fd.unbind())
            }
        };
        let events_columns = match &r.events {
            None => None,
            Some(ev) => {
                let e = PyDict::new(py);
                e.set_item("kind", ev.kind.iter().map(|k| k.name()).collect::<Vec<_>>())?;
                e.set_item("model_op", &ev.model_op)?;
                e.set_item("depth", &ev.depth)?;
                e.set_item("storage_id", &ev.storage)?;
                e.set_item("tensor_id", &ev.tensor)?;
                e.set_item("size", &ev.size)?;
                e.set_item("pinned", &ev.pinned)?;
                e.set_item("clock", &ev.clock)?;
                if let Some(decisions) = &ev.decisions {
                    decision_columns(&e, decisions)?;
                }
                Some(e.unbind())
            }
        };
        Ok(RunResult {
            trace: run.trace,
            heuristic: run.heuristic,
            ratio: run.ratio,
            cap: run.cap,
            start: run.start,
            seed: run.seed,
            engine: "native".into(),
            status: r.status.name().into(),
            budget: r.budget,
            clock: r.clock,
            model_compute: r.model_compute,
            remat_compute: r.remat_compute,
            overhead: r.overhead(),
            overhead_clock: r.overhead_clock(),
            max_memory: r.max_memory,
            evictions: r.evictions,
            distinct_evicted: r.distinct_evicted(),
            evictions_per_storage: r.evictions_per_storage(),
            heuristic_eval_count: r.heuristic_eval_count,
            peak_pinned: r.peak_pinned,
            depth_at_peak_pinned: r.depth_at_peak_pinned,
            max_nesting_depth: r.max_nesting_depth,
            model_ops: r.model_ops,
            fail,
            identical_budget_interval: r.budget.map(|_| (r.identical_budget_lo, r.identical_budget_hi)),
            evicted_ids: PyTuple::new(py, &r.evicted_ids)?.unbind(),
            events_columns,
        })
    }

    /// An instance of `class` (this class or a Python subclass of it) with
    /// these fields. PyO3 can fill a Python subclass's instance only through
    /// the constructor, so this goes through it once, by keyword.
    pub fn into_instance<'py>(self, class: &Bound<'py, PyType>) -> PyResult<Bound<'py, PyAny>> {
        class.call((), Some(&self.kwargs(class.py())?))
    }
}

/// The decision columns of an explained event log (`simulate(explain=True)`):
/// the victim's score and terms, the candidates, the runner-up and its score
/// and terms; `None` where an event is no heuristic eviction, or a term is
/// not the heuristic's.
fn decision_columns(e: &Bound<'_, PyDict>, decisions: &[Option<core::Decision>]) -> PyResult<()> {
    let victims: Vec<Option<&core::Scored>> = decisions.iter().map(|d| d.as_ref().map(|d| &d.victim)).collect();
    let runners: Vec<Option<&core::Scored>> = decisions.iter().map(|d| d.as_ref().and_then(|d| d.runner_up.as_ref())).collect();
    e.set_item("candidates", decisions.iter().map(|d| d.map(|d| d.candidates)).collect::<Vec<_>>())?;
    // (The victim's storage and size are the event's own columns.)
    e.set_item("runner_up", runners.iter().map(|c| c.map(|c| c.storage)).collect::<Vec<_>>())?;
    e.set_item("runner_up_size", runners.iter().map(|c| c.map(|c| c.size)).collect::<Vec<_>>())?;
    for (prefix, of) in [("victim", &victims), ("runner_up", &runners)] {
        let col = |f: fn(&core::Scored) -> Option<i128>| of.iter().map(|c| c.and_then(f)).collect::<Vec<_>>();
        e.set_item(format!("{prefix}_score"), of.iter().map(|c| c.and_then(|c| c.score)).collect::<Vec<_>>())?;
        e.set_item(format!("{prefix}_cost"), col(|c| c.cost))?;
        e.set_item(format!("{prefix}_own"), col(|c| c.own))?;
        e.set_item(format!("{prefix}_forward"), col(|c| c.forward))?;
        e.set_item(format!("{prefix}_reverse"), col(|c| c.reverse))?;
        e.set_item(format!("{prefix}_classes"), col(|c| c.classes))?;
        e.set_item(format!("{prefix}_staleness"), of.iter().map(|c| c.and_then(|c| c.staleness)).collect::<Vec<_>>())?;
    }
    Ok(())
}
