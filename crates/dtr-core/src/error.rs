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

/// Messages quote names from the trace, which may be as long as the file:
/// what is shown is cut to this many characters.
const SHOWN: usize = 400;

/// `text`, cut to `SHOWN` characters with a note of how much was left out.
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(SHOWN) {
        None => text.into(),
        Some((cut, _)) => format!("{}... ({} more bytes)", &text[..cut], text.len() - cut).into(),
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = shown(&self.message);
        if self.line == 0 {
            write!(f, "{}: {message}", self.file)
        } else {
            write!(f, "{}:{}: {message}", self.file, self.line)
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
    /// The run goes past what the engine can represent (a 64-bit count).
    Limit(String),
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Trace(e) => e.fmt(f),
            EngineError::InvalidArgument(m) => write!(f, "invalid argument: {}", shown(m)),
            EngineError::InvalidSchedule { line, message } => {
                write!(f, "trace line {line}: {}", shown(message))
            }
            EngineError::Invariant(m) => write!(f, "engine invariant violated: {}", shown(m)),
            EngineError::Limit(m) => write!(f, "{}", shown(m)),
        }
    }
}

impl std::error::Error for EngineError {}

impl From<TraceError> for EngineError {
    fn from(e: TraceError) -> Self {
        EngineError::Trace(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_when_shown() {
        let e = TraceError { file: "t.log".into(), line: 3, message: format!("unknown tensor name {:?}", "x".repeat(10_000)) };
        let text = e.to_string();
        assert!(text.starts_with("t.log:3: unknown tensor name \"xxx"));
        assert!(text.len() < 500 && text.ends_with("(9622 more bytes)"), "{text}");
        let short = TraceError { file: "t.log".into(), line: 0, message: "é".repeat(10) };
        assert_eq!(short.to_string(), format!("t.log: {}", "é".repeat(10)));
    }
}
