//! A memory limit on a replay. Stable Rust cannot recover from a refused
//! allocation (the process aborts), so the runtime asks, at safe points, how
//! many bytes the engine holds, and stops with [`EngineError::Limit`] once
//! they pass the limit — before the system would refuse.

use crate::error::EngineError;

#[derive(Debug, Clone, Copy)]
pub struct MemoryGuard {
    /// Bytes the engine holds now (e.g. counted by the embedding's allocator).
    pub used: fn() -> u64,
    pub limit: u64,
    /// How the caller can ask for less, appended to the error.
    pub hint: &'static str,
}

impl MemoryGuard {
    #[inline]
    pub fn check(&self) -> Result<(), EngineError> {
        let used = (self.used)();
        if used <= self.limit {
            return Ok(());
        }
        Err(EngineError::Limit(format!(
            "the engine holds {used} bytes, past its memory limit of {} bytes: allow more (memory_limit){}",
            self.limit, self.hint
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ten() -> u64 {
        10
    }

    #[test]
    fn past_the_limit_is_an_error() {
        assert!(MemoryGuard { used: ten, limit: 10, hint: "" }.check().is_ok());
        let e = MemoryGuard { used: ten, limit: 9, hint: " or read less" }.check().unwrap_err();
        assert!(matches!(e, EngineError::Limit(_)), "{e}");
        assert!(e.to_string().ends_with("memory limit of 9 bytes: allow more (memory_limit) or read less"), "{e}");
    }
}
