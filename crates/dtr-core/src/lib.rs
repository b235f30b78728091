//! dtr-core: a bit-exact, fast replay engine for Dynamic Tensor
//! Rematerialization traces, reproducing the reference simulator `simrd`
//! (runtime `RuntimeV2EagerOptimized`). Pure Rust; no Python here.
//!
//! - [`parse`]: trace text to a replay [`Trace`]
//! - [`runtime`]: replay under a budget and a [`Heuristic`]
//! - [`baseline`]: the infinite-budget figures and ratio-to-budget rule

pub mod baseline;
pub mod eqclass;
pub mod error;
pub mod events;
pub mod heuristic;
pub mod memory;
pub mod outcome;
pub mod parse;
pub mod pool;
pub mod ratio;
pub mod regions;
pub mod rng;
pub mod runtime;
pub mod trace;

pub use baseline::{baseline, budget_for_ratio, remat_limit, Baseline};
pub use error::{EngineError, TraceError};
pub use events::{Decision, EventKind, EventLog, Scored};
pub use heuristic::{Heuristic, Terms, HEURISTIC_NAMES};
pub use memory::MemoryGuard;
pub use outcome::{Fail, RunResult, RunStatus};
pub use parse::{parse_trace, parse_trace_bytes, parse_trace_bytes_within};
pub use runtime::{simulate, Progress, RunConfig, Session, TREE_FROM};
pub use trace::Trace;

/// Version of the engine, recorded in every result's provenance.
pub const ENGINE_VERSION: &str = env!("CARGO_PKG_VERSION");
