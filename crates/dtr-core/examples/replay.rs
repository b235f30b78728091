//! Replay a trace from the command line, for profiling and A/B checks of the
//! core without Python in the way:
//!
//!     cargo run --release -p dtr-core --example replay -- TRACE.log RATIOS [HEURISTICS] [REPEAT] [--cap=C] [--events] [--self-check] [--eager] [--tree=N]
//!
//! RATIOS and HEURISTICS are comma-separated (default heuristic DTR);
//! `--cap=C` sets the overhead cap (default 60; `--cap=none` for none);
//! `--tree=N` the pool size from which the victim tree is used (0: always).
//! Prints one line per replay: the ratio, heuristic, status, evictions,
//! heuristic evaluations, a digest of the whole result (every field, and
//! with `--events` the event log) and the time, so that two builds can be
//! compared run by run with `diff` after dropping the times.

use dtr_core::{baseline, budget_for_ratio, parse_trace_bytes, remat_limit, simulate, Heuristic, RunConfig, TREE_FROM};
use std::time::Instant;

fn fail(msg: String) -> ! {
    eprintln!("replay: {msg}");
    std::process::exit(1)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let events = args.iter().any(|a| a == "--events");
    let self_check = args.iter().any(|a| a == "--self-check");
    let eager_regions = args.iter().any(|a| a == "--eager");
    let cap = match args.iter().find_map(|a| a.strip_prefix("--cap=")) {
        None => Some(60.0),
        Some("none") => None,
        Some(c) => Some(c.parse().unwrap_or_else(|_| fail(format!("not a cap: {c}")))),
    };
    let tree_from = match args.iter().find_map(|a| a.strip_prefix("--tree=")) {
        None => TREE_FROM,
        Some(n) => n.parse().unwrap_or_else(|_| fail(format!("not a pool size: {n}"))),
    };
    let pos: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    if pos.len() < 2 {
        eprintln!("usage: replay TRACE.log RATIOS [HEURISTICS] [REPEAT] [--cap=C] [--events] [--self-check] [--eager] [--tree=N]");
        std::process::exit(2);
    }
    let data = std::fs::read(pos[0]).unwrap_or_else(|e| fail(format!("{}: {e}", pos[0])));
    let ratios: Vec<f64> =
        pos[1].split(',').map(|r| r.parse().unwrap_or_else(|_| fail(format!("not a ratio: {r}")))).collect();
    let names: Vec<&str> = pos.get(2).map_or("DTR", |s| s.as_str()).split(',').collect();
    let repeat: usize = pos.get(3).map_or(Ok(1), |s| s.parse()).unwrap_or_else(|_| fail("bad repeat".into()));
    let trace = parse_trace_bytes(pos[0], &data, false).unwrap_or_else(|e| fail(e.to_string()));
    let base = baseline(&trace).unwrap_or_else(|e| fail(e.to_string()));
    for &ratio in &ratios {
        for &name in &names {
            let heuristic = Heuristic::from_name(name).unwrap_or_else(|| fail(format!("no heuristic {name}")));
            let cfg = RunConfig {
                budget: Some(budget_for_ratio(base.peak, ratio).unwrap_or_else(|e| fail(e.to_string()))),
                heuristic,
                remat_limit: remat_limit(base.compute, cap).unwrap_or_else(|e| fail(e.to_string())),
                seed: 0,
                retain: Vec::new(),
                events,
                self_check,
                eager_regions,
                explain: false,
                tree_from,
                memory: None,
            };
            for _ in 0..repeat {
                let t = Instant::now();
                let r = simulate(&trace, &cfg).unwrap_or_else(|e| fail(e.to_string()));
                let secs = t.elapsed().as_secs_f64();
                // FNV-1a over the whole result as Debug prints it.
                let digest = format!("{r:?}")
                    .bytes()
                    .fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3));
                println!(
                    "{ratio} {name} {} evictions={} evals={} digest={digest:016x} {secs:.4}s",
                    r.status.name(),
                    r.evictions,
                    r.heuristic_eval_count,
                );
            }
        }
    }
}
