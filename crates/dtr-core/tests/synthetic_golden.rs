//! The pure-Rust core against the reference records of the 40 synthetic
//! traces (tests/golden/synthetic): every field, eviction sequences included.

use dtr_core::{baseline, EventKind, budget_for_ratio, parse_trace, remat_limit, simulate, Heuristic, RunConfig, RunResult};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/synthetic")
}

fn as_record(r: &RunResult) -> HashMap<&'static str, Value> {
    let fail = r.fail.as_ref().map_or(Value::Null, |f| {
        json!({"pinned": f.pinned, "request": f.request, "depth": f.depth, "over_by": f.over_by,
               "model_op": f.model_op, "tensor_id": f.tensor_id, "tensor_name": f.tensor_name})
    });
    let seq: Vec<Value> =
        r.events.as_ref().unwrap().eviction_sequence().into_iter().map(|(m, s)| json!([m, s])).collect();
    HashMap::from([
        ("status", json!(r.status.name())),
        ("budget", json!(r.budget)),
        ("clock", json!(r.clock)),
        ("model_compute", json!(r.model_compute)),
        ("remat_compute", json!(r.remat_compute)),
        ("overhead", json!(r.overhead())),
        ("overhead_clock", json!(r.overhead_clock())),
        ("max_memory", json!(r.max_memory)),
        ("evictions", json!(r.evictions)),
        ("distinct_evicted", json!(r.distinct_evicted())),
        ("evictions_per_storage", json!(r.evictions_per_storage())),
        ("heuristic_eval_count", json!(r.heuristic_eval_count)),
        ("peak_pinned", json!(r.peak_pinned)),
        ("depth_at_peak_pinned", json!(r.depth_at_peak_pinned)),
        ("max_nesting_depth", json!(r.max_nesting_depth)),
        ("model_ops", json!(r.model_ops)),
        ("fail", fail),
        ("identical_budget_interval", json!([r.identical_budget_lo, r.identical_budget_hi])),
        ("eviction_sequence", json!(seq)),
    ])
}

/// Every heuristic eviction carries its decision, about its own victim,
/// whose score is the least: a runner-up never scores below it, and each
/// score's cost term is the sum of its parts.
fn decisions_hold(r: &RunResult, h: Heuristic, name: &str) {
    let ev = r.events.as_ref().unwrap();
    let decisions = ev.decisions.as_ref().expect("an explaining run keeps decisions");
    assert_eq!(decisions.len(), ev.len(), "{name}");
    for (i, d) in decisions.iter().enumerate() {
        assert_eq!(d.is_some(), ev.kind[i] == EventKind::Evict, "{name} event {i}");
        let Some(d) = d else { continue };
        assert_eq!(d.victim.storage, ev.storage[i], "{name} event {i}");
        assert!(d.candidates > d.runner_up.is_some() as u64, "{name} event {i}");
        for c in std::iter::once(&d.victim).chain(&d.runner_up) {
            let parts = [c.own, c.forward, c.reverse, c.classes].iter().flatten().sum::<i128>();
            match h {
                Heuristic::Random => assert!(c.score.is_none() && c.cost.is_none()),
                Heuristic::Lru => assert!(c.score.is_some() && c.cost.is_none()),
                Heuristic::Score { .. } => {
                    assert!(c.cost == Some(parts) || c.cost == Some(1) && c.own.is_none(), "{name} event {i}: {c:?}")
                }
            }
        }
        if let (Some(u), Heuristic::Score { .. } | Heuristic::Lru) = (&d.runner_up, h) {
            assert_ne!(u.storage, d.victim.storage, "{name} event {i}");
            assert!(u.score.unwrap() >= d.victim.score.unwrap(), "{name} event {i}: {d:?}");
        }
    }
}

#[test]
fn every_synthetic_record_matches() {
    let dir = golden_dir();
    let text = std::fs::read_to_string(dir.join("golden.jsonl")).expect("tests/golden/synthetic/golden.jsonl");
    let mut traces = HashMap::new();
    let (mut runs, mut baselines) = (0, 0);
    for line in text.lines() {
        let rec: Value = serde_json::from_str(line).unwrap();
        let name = rec["trace"].as_str().unwrap().to_string();
        let trace = traces.entry(name.clone()).or_insert_with(|| {
            let log = std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap();
            parse_trace(&format!("{name}.log"), &log, false).unwrap()
        });
        let base = baseline(trace).unwrap();
        if rec["kind"] == "baseline" {
            assert_eq!(json!([base.peak, base.compute, base.const_bytes, base.bottleneck]),
                       json!([rec["peak"], rec["compute"], rec["const"], rec["bottleneck"]]), "{name}");
            baselines += 1;
            continue;
        }
        let ratio = rec["ratio"].as_f64().unwrap();
        let cfg = RunConfig {
            budget: Some(budget_for_ratio(base.peak, ratio).unwrap()),
            heuristic: Heuristic::from_name(rec["heuristic"].as_str().unwrap()).unwrap(),
            remat_limit: remat_limit(base.compute, rec["cap"].as_f64()).unwrap(),
            seed: 0,
            retain: Vec::new(),
            events: true,
            self_check: true,
            eager_regions: false,
            explain: false,
            tree_from: dtr_core::TREE_FROM,
            memory: None,
        };
        // With the self-check (every region settled after every command) and
        // without it (regions rebuilt only when read).
        // And explaining every decision, which must change nothing; and
        // with every choice through the victim tree (`tree_from` 0).
        let tree = dtr_core::TREE_FROM;
        for (self_check, explain, tree_from) in
            [(true, false, tree), (false, false, tree), (false, true, tree), (true, false, 0), (false, false, 0)]
        {
            let cfg = RunConfig { self_check, explain, tree_from, ..cfg.clone() };
            let r = simulate(trace, &cfg).unwrap();
            if explain {
                decisions_hold(&r, cfg.heuristic, &name);
            }
            let got = as_record(&r);
            for (field, value) in got {
                if let Some(expected) = rec.get(field) {
                    assert_eq!(&value, expected, "{name} {} ratio {ratio} cap {} self_check {self_check} tree {tree_from}: {field}",
                               rec["heuristic"], rec["cap"]);
                }
            }
        }
        runs += 1;
    }
    assert_eq!((runs, baselines), (2200, 40));
}
