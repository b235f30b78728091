//! The victim tree on pools large enough to use it: a released chain
//! replayed at half its peak holds about half the chain in the pool (3,000
//! members here, above `TREE_FROM`), every candidate tied. With the
//! self-check every choice of the tree is compared with the full scan's;
//! and the whole result equals the block scan's (`tree_from` past any
//! pool).

use dtr_core::{baseline, budget_for_ratio, parse_trace, simulate, Heuristic, RunConfig, TREE_FROM};

/// A chain of `n` operators whose outputs are released as the next one
/// runs, then read again from the end (as `benchmarks/bench_scaling.py`).
fn chain(n: usize) -> String {
    let mut t = String::from("{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x0\"}\n{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x0\",\"MEMORY\":\"8\"}\n");
    for i in 1..=n {
        t += &format!("{{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"x{}\"],\"RESULT\":[\"x{i}\"],\"TIME\":1}}\n", i - 1);
        t += &format!("{{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x{i}\",\"MEMORY\":\"{}\"}}\n", 100 + (i % 3) * 8);
        t += &format!("{{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x{i}\",\"ALIAS\":\"-1\"}}\n");
        if i > 1 {
            t += &format!("{{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x{}\"}}\n", i - 1);
        }
    }
    t += &format!("{{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x{n}\"}}\n");
    t += "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"w\",\"MEMORY\":\"150\"}\n";
    t += &format!("{{\"INSTRUCTION\":\"CALL\",\"NAME\":\"g\",\"ARGS\":[\"x{n}\"],\"RESULT\":[\"y\"],\"TIME\":1}}\n");
    t + "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"y\",\"MEMORY\":\"100\"}\n{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"y\",\"ALIAS\":\"-1\"}\n"
}

#[test]
fn the_tree_chooses_as_the_scan_on_a_large_pool() {
    let trace = parse_trace("chain.log", &chain(6_000), false).unwrap();
    let base = baseline(&trace).unwrap();
    for name in ["DTR", "MSPS", "AbE", "AbESize", "AbEStale"] {
        for ratio in [0.5, 0.7] {
            let cfg = RunConfig {
                budget: Some(budget_for_ratio(base.peak, ratio).unwrap()),
                heuristic: Heuristic::from_name(name).unwrap(),
                remat_limit: f64::INFINITY,
                seed: 0,
                retain: Vec::new(),
                events: true,
                self_check: false,
                eager_regions: false,
                explain: false,
                tree_from: TREE_FROM,
                memory: None,
            };
            let checked = simulate(&trace, &RunConfig { self_check: true, ..cfg.clone() }).unwrap();
            let tree = simulate(&trace, &cfg).unwrap();
            let scan = simulate(&trace, &RunConfig { tree_from: usize::MAX, ..cfg.clone() }).unwrap();
            assert!(tree.evictions > 2 * TREE_FROM as u64, "{name} {ratio}: a large pool evicts: {}", tree.evictions);
            for other in [&checked, &scan] {
                let fields = |r: &dtr_core::RunResult| {
                    (r.status, r.clock, r.evictions, r.heuristic_eval_count, r.max_memory, r.remat_compute)
                };
                assert_eq!(fields(&tree), fields(other), "{name} {ratio}");
                let seq = |r: &dtr_core::RunResult| r.events.as_ref().unwrap().eviction_sequence();
                assert_eq!(seq(&tree), seq(other), "{name} {ratio}");
            }
        }
    }
}
