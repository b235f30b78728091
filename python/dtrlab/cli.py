"""Command line: ``dtrlab simulate``, ``dtrlab baseline``, ``dtrlab fetch``,
``dtrlab capture``, ``dtrlab run-dtr``.

TRACE is a trace file or a key (densenet, inception, lstm, resnet32,
transformer, treelstm, unet, unroll_gan); keys are fetched and verified on
first use. ``--json`` prints one JSON object with the golden field names.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from dtrlab import arguments, engine, provenance, traces
from dtrlab.config import defaults
from dtrlab.arguments import BadArgument, BadArgumentType
from dtrlab.exceptions import FAILURES, one_line

#: Every option's default, from the configuration schema.
_DEFAULTS = defaults()


def _retain_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--retain takes comma-separated storage ids, got {text!r}") from None


def _add_trace_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", metavar="TRACE", help="trace file or key: " + ", ".join(traces.TRACE_KEYS))
    p.add_argument("--start", action="store_true", help="skip lines up to the ANNOTATE START marker")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _add_policy_args(p: argparse.ArgumentParser, heuristic_help: str, cap_help: str) -> None:
    """--heuristic, and --cap or --no-cap."""
    p.add_argument("--heuristic", default=engine.DEFAULT_HEURISTIC, choices=engine.HEURISTICS, metavar="H",
                   help=heuristic_help + " (default %(default)s)")
    caps = p.add_mutually_exclusive_group()
    caps.add_argument("--cap", type=float, default=engine.DEFAULT_CAP, help=cap_help + " (default %(default)s)")
    caps.add_argument("--no-cap", action="store_true", help="no overhead cap")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dtrlab", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"dtrlab engine {engine.ENGINE_VERSION}")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="replay a trace under a memory budget")
    _add_trace_args(sim)
    size = sim.add_mutually_exclusive_group(required=True)
    size.add_argument("--ratio", type=float, help="budget as a fraction of the baseline peak")
    size.add_argument("--budget", type=int, help="budget in bytes")
    _add_policy_args(sim, "eviction heuristic, by simrd's names", "overhead cap: stop as 'thrashed' past cap x compute")
    sim.add_argument("--seed", type=int, default=None, help="seed of RandomStorage (default 0)")
    sim.add_argument("--retain", type=_retain_list, default=[], metavar="ID,...",
                     help="storage ids never evicted (a causal intervention)")
    sim.add_argument("--engine", choices=("native", "simrd"), default=_DEFAULTS["engine"]["name"],
                     help="simrd: the reference simulator from DTRLAB_SIMRD (default %(default)s)")
    sim.add_argument("--simrd", default=None, help="checkout of the reference (overrides DTRLAB_SIMRD)")
    sim.add_argument("--evicted-ids", action="store_true", help="include per-storage eviction counts")

    why = sub.add_parser("why", help="where the replays at two budgets first choose a different victim, and why")
    _add_trace_args(why)
    why.add_argument("--ratios", type=float, nargs=2, required=True, metavar=("A", "B"),
                     help="the two budgets, as fractions of the baseline peak")
    _add_policy_args(why, "eviction heuristic, by simrd's names", "overhead cap: stop as 'thrashed' past cap x compute")

    base = sub.add_parser("baseline", help="infinite-budget figures: peak, compute, const, bottleneck")
    _add_trace_args(base)
    base.add_argument("--engine", choices=("native", "simrd"), default=_DEFAULTS["engine"]["name"],
                      help="simrd: the reference simulator from DTRLAB_SIMRD (default %(default)s)")
    base.add_argument("--simrd", default=None, help="checkout of the reference (overrides DTRLAB_SIMRD)")

    fetch = sub.add_parser("fetch", help="download (or copy from a mirror), verify and extract the traces")
    fetch.add_argument("--dest", default=None, help=f"folder for the traces (default ${traces.DATA_ENV}, else the per-user cache)")
    fetch.add_argument("--mirror", default=None, help=f"local logs.zip or URL (default ${traces.MIRROR_ENV})")
    fetch.add_argument("--url", default=traces.ARTIFACT_URL,
                       help="where to download logs.zip; its sha256 is pinned (default %(default)s, the pinned commit)")
    fetch.add_argument("--retries", type=int, default=_DEFAULTS["artifact"]["retries"],
                       help="attempts per source (default %(default)s)")

    ref = sub.add_parser("fetch-simrd", help="download the reference simulator at the pinned commit")
    ref.add_argument("--dest", default="data/simrd", help="folder to unpack into, then DTRLAB_SIMRD=DEST (default %(default)s)")

    at = sub.add_parser("atlas", help="map a budget range exactly into execution classes; find every hole")
    _add_trace_args(at)
    at.add_argument("--lo", type=float, required=True, help="lowest budget, as a fraction of the baseline peak")
    at.add_argument("--hi", type=float, required=True, help="highest budget, as a fraction of the baseline peak")
    _add_policy_args(at, "eviction heuristic", "overhead cap of every run")
    # The workflow's settings (the schema's atlas defaults); 0 lifts a limit.
    limits = _DEFAULTS["atlas"]
    for flag, kind, text in (
        ("max-runs", int, "exact walk for at most this many runs, then grid + bisection (reported as sampled); "
                          "default %(default)s, 0 for no limit"),
        ("walk-ops", float, "operators the exact walk may replay (its runs' simulated time in baseline replays "
                            "times the trace's operators); default %(default)s, 0 for no limit"),
        ("walk-share", float, "stop the exact walk once this share of the range is exact; default %(default)s, "
                              "1 for the whole range"),
        ("time-limit", float, "seconds of exact walk before sampling (default %(default)s: none)"),
        ("grid", int, "samples of the fallback grid (default %(default)s)"),
        ("max-total-runs", int, "runs of exact walk outward from status changes (the grid and bisections still "
                                "complete, unless --no-resolve); default %(default)s, 0 for no limit"),
        ("edge-runs", int, "after sampling, exact walk this many classes outward from every status change "
                           "(default %(default)s)"),
        ("max-work", float, "simulated time of exact walks, in baseline replays (as --max-total-runs); "
                            "default %(default)s, 0 for no limit"),
    ):
        at.add_argument(f"--{flag}", type=kind, default=limits[flag.replace("-", "_")], help=text)
    at.add_argument("--no-resolve", action="store_true",
                    help="let the limits stop the grid and bisections too, reporting the rest as unresolved")
    at.add_argument("--forensics", action="store_true", help="first differing eviction and retention per hole")

    cap = sub.add_parser("capture", help="record one training step of a PyTorch model as a trace "
                                         "(extra: pip install 'dtrlab[capture]')")
    cap.add_argument("model", metavar="MODEL",
                     help="a built-in model (resnet50, vit_b_16, gpt2_small, lstm_lm, unet) or "
                          "package.module:function returning a dtrlab.capture.Workload")
    cap.add_argument("--out", required=True, help="trace file to write")
    cap.add_argument("--batch", type=int, default=None, help="batch size (default: the model's own)")
    cap.add_argument("--measure", action="store_true",
                     help="operator costs from measured CPU wall time instead of the cost model "
                          "(not reproducible across machines)")
    cap.add_argument("--no-optimizer-step", action="store_true",
                     help="stop after the backward pass, as the 2020 traces do (the format pins constants: "
                          "a parameter updated in place stays resident beside its new value)")

    rt = sub.add_parser("run-dtr", help="one training step of a PyTorch model under a budget, tensors really "
                                        "evicted and recomputed (extra: pip install 'dtrlab[capture]')")
    rt.add_argument("model", metavar="MODEL",
                    help="a built-in model (resnet50, vit_b_16, gpt2_small, lstm_lm, unet) or "
                         "package.module:function returning a dtrlab.capture.Workload")
    size = rt.add_mutually_exclusive_group(required=True)
    size.add_argument("--ratio", type=float, help="budget as a fraction of the step's peak (its plan's baseline)")
    size.add_argument("--budget", type=int, help="budget in bytes")
    rt.add_argument("--batch", type=int, default=None, help="batch size (default: the model's own)")
    _add_policy_args(rt, "eviction heuristic", "overhead cap: stop as 'thrashed' past cap x compute")
    rt.add_argument("--trigger", choices=("model", "ledger", "allocator"), default="model",
                    help="what the budget is checked against: the engine's bytes (model: every decision the "
                         "simulator's), the runtime's ledger, or the C allocator's bytes (default %(default)s)")
    rt.add_argument("--costs", choices=("model", "measured"), default="model",
                    help="operator costs: the capture's cost model, or measured CPU times (default %(default)s)")
    rt.add_argument("--no-optimizer-step", action="store_true", help="stop after the backward pass")
    rt.add_argument("--threads", type=int, default=1, help="intra-op threads, fixed for exact reruns (default 1)")
    rt.add_argument("--repeat", type=int, default=1,
                    help="run the step this many times (and the no-op baseline as often); report the run of "
                         "median wall time, with the range (default 1)")
    rt.add_argument("--events", action="store_true", help="include the event log (what was evicted and recomputed)")
    rt.add_argument("--json", action="store_true", help="print one JSON object")

    ver = sub.add_parser("verify", help="re-hash every artifact of a manifest; non-zero exit on any mismatch")
    ver.add_argument("manifest", nargs="?", default="results/MANIFEST.json")
    ver.add_argument("--root", default=None, help="workflow root (default: the manifest's grandparent)")
    ver.add_argument("--against", default=None, metavar="REFERENCE",
                     help="also compare every hash with a reference run's manifest (same configuration)")
    return parser


def _print_human(d: dict) -> None:
    width = max(len(k) for k in d)
    for k, v in d.items():
        if isinstance(v, dict):
            v = ", ".join(f"{a}={b}" for a, b in v.items())
        print(f"{k:<{width}}  {v}")


def _print_record(args, out: dict) -> None:
    if args.json:
        print(json.dumps(out, sort_keys=False))
    else:
        _print_human(out)


# ----- user commands -----------------------------------------------------------

def cmd_simulate(args) -> int:
    trace = engine.load_trace(args.trace, start=args.start)
    result = engine.simulate(trace, budget=args.budget, ratio=args.ratio, heuristic=args.heuristic,
                             cap=None if args.no_cap else args.cap, seed=args.seed, retain=args.retain,
                             engine=args.engine)
    _print_record(args, result.to_dict(evicted_ids=args.evicted_ids))
    return 0


def _decision_line(d: dict) -> str:
    def cand(c: dict) -> str:
        score = "" if c["score"] is None else f" score {c['score']:.4g}"
        return f"storage {c['storage_id']} ({c['op_name']}){score}"

    line = f"op {d['model_op']}, clock {d['clock']}: evicts {cand(d['victim'])}"
    return line + (f"; runner-up {cand(d['runner_up'])}" if d["runner_up"] else "; no runner-up")


def cmd_why(args) -> int:
    from dtrlab.analysis import decisions

    a, b = (arguments.real("--ratios", r, 0.0, lo_open=True) for r in args.ratios)
    if a == b:
        raise BadArgument("--ratios: give two different budgets")
    trace = engine.load_trace(args.trace, start=args.start)
    runs = {f"{r:g}": engine.simulate(trace, ratio=r, heuristic=args.heuristic,
                                      cap=None if args.no_cap else args.cap, explain=True) for r in (a, b)}
    out = decisions.first_divergence(trace, runs, args.heuristic)
    if args.json:
        print(json.dumps(out, sort_keys=False))
        return 0
    la, lb = out["runs"]
    print(f"{la}: {out['decisions'][la]:,} decisions; {lb}: {out['decisions'][lb]:,}")
    if out["decision"] is None:
        print("no victim differs: one run's victims are the first of the other's")
        return 0
    print(f"decision {out['decision']} differs ({out['same_victims_before']} same victims before)")
    for label in (la, lb):
        print(f"{label}: {_decision_line(out[label])}")
    reason = {"clock": f"only the clock differs; the two scores cross at clock {out['crossover_clock']:.0f}",
              "terms": "the same two candidates lead, with different cost terms",
              "pool": "the choices are between different candidates"}[out["cause"]]
    print(f"cause: {out['cause']}: {reason}")
    return 0


def cmd_baseline(args) -> int:
    trace = engine.load_trace(args.trace, start=args.start)
    _print_record(args, {"trace": trace.key, "start": trace.start,
                         **engine.baseline(trace, engine=args.engine).to_dict()})
    return 0


def cmd_fetch(args) -> int:
    from dtrlab.steps.data import fetch

    arguments.integer("--retries", args.retries, 1)
    dest = args.dest or traces.default_data_dir()
    fetch(dest, args.mirror or traces.default_mirror(), args.url, args.retries)
    print(f"traces verified in {dest}")
    return 0


def cmd_fetch_simrd(args) -> int:
    from dtrlab import reference

    print(f"simrd @ {reference.SIMRD_COMMIT[:8]} in {reference.fetch(args.dest)}")
    return 0


def cmd_atlas(args) -> int:
    from tqdm import tqdm

    from dtrlab import atlas

    arguments.real("--lo", args.lo, 0.0)
    arguments.real("--hi", args.hi, 0.0)
    trace = engine.load_trace(args.trace, start=args.start)
    peak = engine.baseline(trace).peak
    lo_b, hi_b = engine.budget_for_ratio(peak, args.lo), engine.budget_for_ratio(peak, args.hi)
    with tqdm(total=hi_b - lo_b + 1, unit="B", unit_scale=True, desc=f"{trace.key} atlas",
              file=sys.stderr, disable=None) as bar:
        def progress(done, total):
            bar.update(done - bar.n)

        # Off a terminal (no bar), say what is being run instead.
        log = None if sys.stderr.isatty() else (lambda line: print(line, file=sys.stderr, flush=True))
        a = atlas.build(trace, lo_b, hi_b, heuristic=args.heuristic, cap=None if args.no_cap else args.cap,
                        max_runs=args.max_runs or None, walk_ops=args.walk_ops or None, walk_share=args.walk_share,
                        time_limit=args.time_limit, grid=args.grid,
                        max_total_runs=args.max_total_runs or None, edge_runs=args.edge_runs,
                        max_work=args.max_work or None, resolve=not args.no_resolve, progress=progress, log=log)
    doc = a.to_dict()
    if args.forensics:
        doc["forensics"] = [atlas.hole_forensics(trace, a, h) for h in a.holes()]
    if args.json:
        print(json.dumps(doc))
        return 0
    print(f"{a.trace} {a.heuristic}: {len(a.classes)} execution classes in [{a.lo_budget}, "
          f"{a.hi_budget}] from {a.runs} runs ({'exact' if a.exact else 'partly sampled'})")
    for h in doc["holes"]:
        print(f"  hole [{h['lo']}, {h['hi']}] ({h['hi'] - h['lo'] + 1} B) between ok budgets "
              f"{h['below_ok_budget']} and {h['above_ok_budget']}")
    return 0


def cmd_capture(args) -> int:
    if args.batch is not None:
        arguments.integer("--batch", args.batch, 1)
    try:
        from dtrlab import capture
    except ImportError as e:
        raise ValueError(str(e)) from None
    try:
        c = capture.capture_workload(capture.load_workload(args.model, args.batch), measure=args.measure,
                                     optimizer_step=not args.no_optimizer_step)
    except RuntimeError as e:  # PyTorch's own errors (a model that cannot train, ...)
        raise ValueError(f"capture of {args.model} failed: {e}") from None
    capture.write_trace(c.text, args.out)
    print(f"{args.out}: {c.operators} operators, {len(c.text.splitlines())} lines, "
          f"peak of live storages {c.live_peak:,} B")
    return 0


def cmd_run_dtr(args) -> int:
    try:
        from dtrlab.runtime.command import run_dtr
    except ImportError as e:
        raise ValueError(str(e)) from None
    return run_dtr(args)


def cmd_verify(args) -> int:
    problems = provenance.verify(args.manifest, args.root)
    for p in problems:
        print(f"MISMATCH {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"{args.manifest}: every artifact verified")
    return _against(args.manifest, args.against) if args.against else 0


def _against(manifest: str, reference: str) -> int:
    """Artifact by artifact against a reference run; 1 if any data artifact
    differs, is missing or is extra (documents and measurements may differ:
    see provenance.DOCUMENT_SUFFIXES and MEASURED_FOLDER)."""
    rows = provenance.compare(manifest, reference)
    for r in rows:
        label = r.status.upper() if not r.acceptable else r.status
        print(f"{label:<10} {r.kind:<8} {r.path}")
    counts = Counter((r.status, r.kind) for r in rows)
    total = Counter(r.kind for r in rows)
    print(f"against {reference}: {counts[('identical', 'data')]} of {total['data']} data artifacts identical, "
          f"{counts[('identical', 'document')]} of {total['document']} documents identical"
          + (f", {counts[('identical', 'measured')]} of {total['measured']} measurements identical"
             if total["measured"] else ""))
    if any(r.document and r.status == "differs" for r in rows):
        print("documents (figures, the paper) may differ: they also depend on the matplotlib and TeX Live "
              "versions, and the paper names the commit it was built from")
    if any(r.measurement and r.status == "differs" for r in rows):
        print("measurements (results/runtime/measured: wall-clock times, measured bytes) differ from run to run")
    bad = [r for r in rows if not r.acceptable]
    if bad:
        print(f"{len(bad)} artifacts differ from the reference or are missing from one run", file=sys.stderr)
        return 1
    return 0


#: Subcommand -> handler (the workflow's steps are not commands: see dtrlab.steps).
COMMANDS = {
    "simulate": cmd_simulate,
    "why": cmd_why,
    "baseline": cmd_baseline,
    "fetch": cmd_fetch,
    "fetch-simrd": cmd_fetch_simrd,
    "atlas": cmd_atlas,
    "capture": cmd_capture,
    "run-dtr": cmd_run_dtr,
    "verify": cmd_verify,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "simrd", None):
        import os

        os.environ["DTRLAB_SIMRD"] = args.simrd
    try:
        return COMMANDS[args.command](args)
    except (BadArgument, BadArgumentType) as e:
        # Bad usage, like argparse's own errors.
        print(f"dtrlab: error: {e}", file=sys.stderr)
        return 2
    except FAILURES as e:
        # The command failed: one line, never a traceback.
        print(f"dtrlab: error: {one_line(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
