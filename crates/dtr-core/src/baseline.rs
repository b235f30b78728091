//! The infinite-budget baseline and the figures derived from it: the peak
//! that budget ratios refer to, total compute, constant bytes, bottleneck.

use crate::error::EngineError;
use crate::heuristic::Heuristic;
use crate::runtime::{simulate, RunConfig};
use crate::trace::Trace;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Baseline {
    /// Peak resident bytes of the eager runtime with an infinite budget.
    pub peak: u64,
    /// Total model compute (sum of every operator's cost).
    pub compute: u64,
    /// Bytes of all constants.
    pub const_bytes: u64,
    /// Largest `outputs + parents` footprint of any single operator.
    pub bottleneck: u64,
}

pub fn baseline(trace: &Trace) -> Result<Baseline, EngineError> {
    let cfg = RunConfig {
        budget: None,
        // Never consulted with an infinite budget; LRU keeps no extra state.
        heuristic: Heuristic::Lru,
        remat_limit: f64::INFINITY,
        seed: 0,
        retain: Vec::new(),
        events: false,
        self_check: false,
        eager_regions: false,
        explain: false,
        tree_from: crate::runtime::TREE_FROM,
        memory: None,
    };
    let r = simulate(trace, &cfg)?;
    Ok(Baseline { peak: r.max_memory, compute: r.model_compute, const_bytes: r.const_bytes, bottleneck: r.bottleneck })
}

/// Budget for a ratio of the baseline peak: `int(peak * ratio)` as in Python
/// (one rounded float product, then truncation).
pub fn budget_for_ratio(peak: u64, ratio: f64) -> Result<u64, EngineError> {
    if !ratio.is_finite() || ratio < 0.0 {
        return Err(EngineError::InvalidArgument(format!("ratio must be a finite number >= 0, got {ratio}")));
    }
    let product = peak as f64 * ratio;
    if product >= 18446744073709551616.0 {
        return Err(EngineError::InvalidArgument(format!("ratio {ratio} gives a budget beyond 2^64 bytes")));
    }
    Ok(product as u64)
}

/// `remat_limit = compute * (cap - 1)` as a Python float; no cap is +inf.
pub fn remat_limit(compute: u64, cap: Option<f64>) -> Result<f64, EngineError> {
    match cap {
        None => Ok(f64::INFINITY),
        Some(c) if c.is_nan() => Err(EngineError::InvalidArgument("cap must be a number".into())),
        Some(c) => Ok(compute as f64 * (c - 1.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_budget_truncates_like_python() {
        // int(10061179648 * 0.104) in Python.
        assert_eq!(budget_for_ratio(10061179648, 0.104).unwrap(), 1046362683);
        assert_eq!(budget_for_ratio(5595127736, 0.264).unwrap(), 1477113722);
        assert!(budget_for_ratio(1, f64::NAN).is_err());
        assert!(budget_for_ratio(1, -0.5).is_err());
    }

    #[test]
    fn cap_sets_the_limit() {
        assert_eq!(remat_limit(291905487, Some(60.0)).unwrap(), 291905487.0 * 59.0);
        assert_eq!(remat_limit(5, None).unwrap(), f64::INFINITY);
    }
}
