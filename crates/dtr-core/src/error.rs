//! The two ways a request can fail. Running out of memory or thrashing are
//! *outcomes* of a run (see `RunStatus`), never errors.

use std::fmt;

/// A trace file that cannot be replayed: names the file and the 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    pub file: String,
    /// 1-based line number; 0 when the problem concerns the file as a whole.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

impl std::error::Error for TraceError {}

/// Everything else: a bad argument or a schedule the runtime cannot honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineError {
    Trace(TraceError),
    /// An argument outside its domain (unknown heuristic, negative ratio, ...).
    InvalidArgument(String),
    /// The schedule asks for something impossible (e.g. releasing a tensor that
    /// has no references left); names the trace line that issued the command.
    InvalidSchedule { line: usize, message: String },
    /// A self-check found the engine's state inconsistent (a bug).
    Invariant(String),
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Trace(e) => e.fmt(f),
            EngineError::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            EngineError::InvalidSchedule { line, message } => {
                write!(f, "trace line {line}: {message}")
            }
            EngineError::Invariant(m) => write!(f, "engine invariant violated: {m}"),
        }
    }
}

impl std::error::Error for EngineError {}

impl From<TraceError> for EngineError {
    fn from(e: TraceError) -> Self {
        EngineError::Trace(e)
    }
}
