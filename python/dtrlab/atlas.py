"""The feasibility atlas: the budget axis of a trace mapped exactly.

Every replay reports its *identical-budget interval* ``[L, U-1]``: every
budget in it gives the very same execution. Walking from ``lo`` upward, each
run covers its whole class and the next run starts at ``U``; the result is the
exact partition of ``[lo, hi]`` into execution classes, each with its status
and overhead. No budget is skipped, so no failure region can hide between
samples.

Where a range has more classes than the run budget allows, the walk switches
to a grid of samples plus bisection to the byte at every status change. Those
parts are reported as *sampled*: their status changes are exact, but a failure
region narrower than the grid spacing between two samples of equal status
could be missed there, and the output says so. Because narrow holes cluster
next to the status changes (ResNet-32's 128-byte holes sit just above its OOM
band), the classes on either side of every change are then walked exactly
too (``edge_runs`` classes each way).

The exact walk from ``lo`` spends a deterministic budget of its own: it
stops once ``walk_share`` of the range is exact, or once its runs have
replayed ``walk_ops`` operators (a run's simulated time in baseline replays
times the trace's operators: a deterministic stand-in for CPU time, so that a
trace whose replays are cheap is walked further), or after ``max_runs`` runs.
Classes are narrow where budgets are low and wide near the peak, so the same
budget buys very different shares of different ranges.

Two deterministic limits bound the *walks outward from status changes*: a
run count (``max_total_runs``) and a *work* budget (``max_work``): the
simulated time of all their runs, in units of the trace's baseline compute. A
replay's cost grows with its simulated time, so a range full of thrashing runs
(each up to ``cap`` times the baseline) stops walking early instead of taking
hours. Both limits are checked before each run, so the last run may overshoot
by at most one run's work. They count only runs after the walk from ``lo``:
a long walk leaves the search for narrow holes its whole budget.

*Resolution* — the grid and the bisection of every status change — is not
bounded by those limits (``resolve=True``, the default): it costs at most
``grid`` runs plus one bisection per status change (about 40 runs for a
gigabyte-wide gap), so every byte of the range ends with a definite status,
exact or sampled, and nothing is left unresolved. With ``resolve=False`` the
limits stop resolution too, and what is left is reported as unresolved
(``mixed`` or ``unknown``), never guessed.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import asdict, dataclass, field

from dtrlab import arguments, engine
from dtrlab.analysis import inversions
from dtrlab.config import defaults

@dataclass
class ExecClass:
    """Budgets ``lo..hi`` (bytes, inclusive) share one execution."""

    lo: int
    hi: int
    status: str
    overhead: float | None
    exact: bool = True  # False: a sampled stretch (same status at both ends)
    #: The run's own identical-budget interval (None for a sampled stretch):
    #: two entries with the same interval are one class (split by a chunk edge).
    interval: tuple[int, int | None] | None = None


@dataclass
class Atlas:
    trace: str
    heuristic: str
    cap: float | None
    lo_budget: int
    hi_budget: int
    peak: int
    classes: list[ExecClass] = field(default_factory=list)
    runs: int = 0
    #: Baseline compute of the trace and the summed simulated clock of all runs.
    compute: int = 0
    clock: int = 0

    @property
    def work(self) -> float:
        """Simulated time spent, in baseline replays (sum of clock / compute)."""
        return self.clock / self.compute if self.compute else 0.0

    @property
    def exact(self) -> bool:
        return all(c.exact for c in self.classes)

    @property
    def exact_bytes(self) -> int:
        """Budgets of the range in exact classes (the rest is sampled or unresolved)."""
        return sum(c.hi - c.lo + 1 for c in self.classes if c.exact)

    @property
    def exact_share(self) -> float:
        """The share of the range's budgets in exact classes: the coverage
        stated beside every hole count."""
        return self.exact_bytes / (self.hi_budget - self.lo_budget + 1)

    def holes(self) -> list[dict]:
        """Maximal failing stretches (oom/thrashed) with an ok class right
        below and right above (unresolved stretches never count as either)."""
        out, cs = [], self.classes
        for i, j in inversions.runs([c.status in ("oom", "thrashed") for c in cs]):
            if i > 0 and j + 1 < len(cs) and cs[i - 1].status == "ok" and cs[j + 1].status == "ok":
                out.append({"lo": cs[i].lo, "hi": cs[j].hi, "below_ok_budget": cs[i - 1].hi,
                            "above_ok_budget": cs[j + 1].lo, "statuses": sorted({c.status for c in cs[i:j + 1]}),
                            "exact": all(c.exact for c in cs[i - 1:j + 2])})
        return out

    def unresolved(self) -> dict:
        """Bytes left unresolved by the run limit (mixed statuses, or never sampled)."""
        return {s: sum(c.hi - c.lo + 1 for c in self.classes if c.status == s) for s in ("mixed", "unknown")}

    def to_dict(self) -> dict:
        return {
            "trace": self.trace, "heuristic": self.heuristic, "cap": self.cap,
            "lo_budget": self.lo_budget, "hi_budget": self.hi_budget, "peak": self.peak,
            "classes": [{**asdict(c), "interval": None if c.interval is None else list(c.interval)}
                        for c in self.classes],
            "holes": self.holes(), "exact": self.exact, "runs": self.runs, "unresolved_bytes": self.unresolved(),
            "compute": self.compute, "clock": self.clock, "work": self.work,
        }


class _Prober:
    """Replays at byte budgets, remembering every class seen."""

    def __init__(self, trace: engine.Trace, heuristic: str, cap: float | None, limit: int | None = None,
                 log=None, compute: int = 1, max_work: float | None = None, resolve: bool = True):
        self.trace, self.heuristic, self.cap = trace, heuristic, cap
        self.runs = 0
        self.clock = 0  # summed simulated clock of every run
        # What the walk from the range's start spent (the limits count the rest).
        self.walk_runs = 0
        self.walk_clock = 0
        self.limit = limit
        self.log = log
        self.compute = compute
        self.max_work = max_work
        self.resolve = resolve

    @property
    def work(self) -> float:
        return self.clock / self.compute

    def end_walk(self) -> None:
        """From here on the run and work limits count."""
        self.walk_runs, self.walk_clock = self.runs, self.clock

    @property
    def exhausted(self) -> bool:
        return ((self.limit is not None and self.runs - self.walk_runs >= self.limit)
                or (self.max_work is not None and self.clock - self.walk_clock >= self.max_work * self.compute))

    @property
    def resolution_stopped(self) -> bool:
        """Whether the grid and bisection must stop too (only without ``resolve``)."""
        return not self.resolve and self.exhausted

    def run(self, budget: int, **kw) -> engine.SimResult:
        self.runs += 1
        r = engine.simulate(self.trace, budget=budget, heuristic=self.heuristic, cap=self.cap, **kw)
        self.clock += r.clock
        return r

    def class_at(self, budget: int) -> tuple[int, int | None, engine.SimResult]:
        """The class containing ``budget``: (first budget, last budget or None = unbounded, run)."""
        r = self.run(budget)
        lo, hi = r.identical_budget_interval
        lo = 0 if lo is None else lo
        if not (lo <= budget and (hi is None or budget <= hi)):  # the engine guarantees this
            raise AssertionError(f"budget {budget} outside its own interval [{lo}, {hi}]")
        if self.log is not None:
            self.log(f"run {self.runs}: budget {budget:,} -> {r.status}, class [{lo:,}, {hi if hi is None else f'{hi:,}'}], "
                     f"work {self.work:.1f}")
        return lo, hi, r

    def probe(self, budget: int, lo: int, hi: int) -> ExecClass:
        """The exact class of ``budget``, clipped to the range ``[lo, hi]``."""
        clo, chi, r = self.class_at(budget)
        return ExecClass(max(clo, lo), hi if chi is None else min(chi, hi), r.status, r.overhead,
                         interval=(clo, chi))


#: The workflow's atlas settings (the configuration schema's defaults).
LIMITS = defaults()["atlas"]


def build(
    trace: engine.Trace,
    lo_budget: int,
    hi_budget: int,
    heuristic: str = engine.DEFAULT_HEURISTIC,
    cap: float | None = engine.DEFAULT_CAP,
    max_runs: int | None = LIMITS["max_runs"],
    walk_ops: float | None = LIMITS["walk_ops"],
    walk_share: float = LIMITS["walk_share"],
    time_limit: float | None = LIMITS["time_limit"],
    grid: int = LIMITS["grid"],
    max_total_runs: int | None = LIMITS["max_total_runs"],
    edge_runs: int = LIMITS["edge_runs"],
    max_work: float | None = LIMITS["max_work"],
    resolve: bool = LIMITS["resolve"],
    progress=None,
    log=None,
) -> Atlas:
    """Partition ``[lo_budget, hi_budget]`` into execution classes.

    The limits default to the workflow's (:data:`LIMITS`); ``None`` lifts
    one (``max_runs=None, walk_ops=None, walk_share=1, max_total_runs=None,
    max_work=None``: one exact walk of the whole range, however long).

    Exact from ``lo_budget`` until ``walk_share`` of the range is, or its
    runs have replayed ``walk_ops`` operators, or ``max_runs`` runs (or
    ``time_limit`` seconds) are spent; the rest of the range is then sampled
    on ``grid`` points with bisection to the byte at each status change, and
    up to ``edge_runs`` classes are walked exactly on each side of every
    status change. ``max_total_runs`` and ``max_work`` (simulated time in
    baseline replays) bound those walks; the grid and every bisection still
    complete unless ``resolve`` is False, in which case status changes left
    unbisected are reported as ``mixed`` stretches, budgets never run as
    ``unknown`` (never dropped).
    ``log`` (a callable taking a line) hears of every run and phase.
    """
    lo_budget = arguments.integer("lo_budget", lo_budget)
    hi_budget = arguments.integer("hi_budget", hi_budget)
    if hi_budget < lo_budget:
        raise ValueError(f"hi_budget {hi_budget} is below lo_budget {lo_budget}")
    arguments.choice("heuristic", heuristic, engine.HEURISTICS)
    cap = arguments.cap(cap)
    for name, value in (("max_runs", max_runs), ("max_total_runs", max_total_runs)):
        if value is not None:
            arguments.integer(name, value, 1)
    grid = arguments.integer("grid", grid, 2)
    edge_runs = arguments.integer("edge_runs", edge_runs)
    arguments.boolean("resolve", resolve)
    for name, value in (("time_limit", time_limit), ("max_work", max_work), ("walk_ops", walk_ops)):
        if value is not None:
            arguments.real(name, value, 0.0, lo_open=True, allow_inf=True)
    walk_share = arguments.real("walk_share", walk_share, 0.0, lo_open=True)
    if walk_share > 1:
        raise ValueError(f"walk_share must be at most 1, not {walk_share!r}")
    base = engine.baseline(trace)
    atlas = Atlas(trace.key, heuristic, cap, lo_budget, hi_budget, base.peak, compute=base.compute)
    prober = _Prober(trace, heuristic, cap, max_total_runs, log, compute=max(base.compute, 1), max_work=max_work,
                     resolve=resolve)
    start = time.monotonic()
    width = hi_budget - lo_budget + 1
    # The walk's budget in baseline replays: operators replayed over the trace's.
    walk_work = None if walk_ops is None else walk_ops / max(trace.n_ops, 1)
    b = lo_budget
    while b <= hi_budget:
        out_of_budget = (max_runs is not None and prober.runs >= max_runs) or (
            time_limit is not None and time.monotonic() - start > time_limit) or (
            walk_work is not None and prober.work >= walk_work) or b - lo_budget >= walk_share * width
        if out_of_budget:
            prober.end_walk()
            if log is not None:
                log(f"exact walk stopped at {b:,}: " + ("run or work limit reached, the rest is unresolved"
                                                        if prober.resolution_stopped else
                                                        f"sampling {grid} points with bisection"))
            sampled = _sampled(prober, b, hi_budget, grid)
            if edge_runs and log is not None:
                log(f"walking up to {edge_runs} classes outward from every status change")
            atlas.classes += _refine_edges(prober, sampled, edge_runs, b, hi_budget) if edge_runs else sampled
            break
        clo, hi, r = prober.class_at(b)
        top = hi_budget if hi is None else min(hi, hi_budget)
        atlas.classes.append(ExecClass(b, top, r.status, r.overhead, interval=(clo, hi)))
        if progress is not None:
            progress(top - lo_budget + 1, hi_budget - lo_budget + 1)
        b = top + 1
    atlas.classes = merge_classes(atlas.classes)
    atlas.runs, atlas.clock = prober.runs, prober.clock
    if log is not None and prober.exhausted:
        log(f"exact walks stopped by the run or work limit; {prober.runs} runs, work {prober.work:.1f}")
    return atlas


def merge_classes(classes: list[ExecClass]) -> list[ExecClass]:
    """Join touching entries of one class (same interval, e.g. across a chunk
    edge) and touching sampled stretches of one status."""
    out: list[ExecClass] = []
    for c in sorted(classes, key=lambda c: c.lo):
        p = out[-1] if out else None
        same_class = p and p.exact and c.exact and p.interval is not None and p.interval == c.interval
        same_sampled = p and not p.exact and not c.exact and p.status == c.status
        if p and p.hi + 1 == c.lo and (same_class or same_sampled):
            p.hi = c.hi
        else:
            out.append(ExecClass(**asdict(c)))
    return out


def combine(parts: list[Atlas]) -> Atlas:
    """Atlases of consecutive budget ranges (chunks) as one."""
    parts = sorted(parts, key=lambda a: a.lo_budget)
    for a, b in zip(parts, parts[1:]):
        if a.hi_budget + 1 != b.lo_budget:
            raise ValueError(f"chunks do not touch: {a.hi_budget} then {b.lo_budget}")
    first = parts[0]
    out = Atlas(first.trace, first.heuristic, first.cap, first.lo_budget, parts[-1].hi_budget, first.peak,
                compute=first.compute)
    out.classes = merge_classes([c for p in parts for c in p.classes])
    out.runs = sum(p.runs for p in parts)
    out.clock = sum(p.clock for p in parts)
    return out


def from_dict(d: dict) -> Atlas:
    a = Atlas(d["trace"], d["heuristic"], d["cap"], d["lo_budget"], d["hi_budget"], d["peak"])
    a.classes = [ExecClass(**{**c, "interval": None if c.get("interval") is None else tuple(c["interval"])})
                 for c in d["classes"]]
    a.runs = d.get("runs", 0)
    a.compute, a.clock = d.get("compute", 0), d.get("clock", 0)
    return a


def _sampled(prober: _Prober, lo: int, hi: int, grid: int) -> list[ExecClass]:
    """Exact classes at ``grid`` sample budgets, then, between consecutive
    samples: bisection to the byte where the status changes; otherwise an
    inexact stretch of the common status (a narrower failure could hide there).
    The whole grid is sampled before any bisection, so a job cut short by its
    limits still knows the status across its whole range."""
    n = max(2, grid)
    samples: list[ExecClass] = []
    out: list[ExecClass] = []
    for k in range(n):
        b = lo + (hi - lo) * k // (n - 1)
        if samples and b <= samples[-1].hi:
            continue
        if prober.resolution_stopped:
            out.append(ExecClass(samples[-1].hi + 1 if samples else lo, hi, "unknown", None, exact=False))
            break
        samples.append(prober.probe(b, lo, hi))
    out += samples
    for a, c in zip(samples, samples[1:]):
        _fill_gap(prober, a, c, lo, hi, out)
    return sorted(out, key=lambda c: c.lo)


def _refine_edges(prober: _Prober, classes: list[ExecClass], edge_runs: int, lo: int, hi: int) -> list[ExecClass]:
    """Walk exactly from every status change outward, up to ``edge_runs``
    runs each way (stepping over classes already known, and walking from the
    new status changes such walks find), then re-derive the sampled stretches
    between the exact classes, bisecting any status change a walk left."""
    definite = ("ok", "oom", "thrashed")
    # Known stretches: exact classes, and the unresolved ones the run limit left.
    known = sorted((c for c in classes if c.exact or c.status not in definite), key=lambda c: c.lo)

    def find(b: int) -> int:
        """Index of the known stretch holding b, or -(insertion point) - 1."""
        i = bisect.bisect_right([c.lo for c in known], b) - 1
        return i if i >= 0 and known[i].hi >= b else -(i + 1) - 1

    def edges_at(c: ExecClass) -> list[tuple[ExecClass, int]]:
        """Walks to start from ``c``: up if it differs from the class just
        below, down if it differs from the class just above."""
        out = []
        for nb, direction in ((c.lo - 1, +1), (c.hi + 1, -1)):
            i = find(nb)
            if i >= 0 and known[i].exact and known[i].status in definite and known[i].status != c.status:
                out.append((c, direction))
        return out

    queue = [e for c in known if c.exact and c.status in definite for e in edges_at(c)]
    walked = set()
    while queue and not prober.exhausted:
        c, direction = queue.pop(0)
        if (c.lo, direction) in walked:
            continue
        walked.add((c.lo, direction))
        b, runs = (c.hi + 1 if direction > 0 else c.lo - 1), 0
        while runs < edge_runs and lo <= b <= hi and not prober.exhausted:
            i = find(b)
            if i >= 0:
                if not known[i].exact:
                    break  # an unresolved stretch: leave it as reported
                b = known[i].hi + 1 if direction > 0 else known[i].lo - 1
                continue
            ins = -i - 1  # known[ins - 1].hi < b < known[ins].lo
            floor = known[ins - 1].hi + 1 if ins > 0 else lo
            ceil = known[ins].lo - 1 if ins < len(known) else hi
            n = prober.probe(b, lo, hi)
            n.lo, n.hi = max(n.lo, floor), min(n.hi, ceil)
            known.insert(ins, n)
            runs += 1
            queue += [e for e in edges_at(n) if e[1] == direction]
            b = n.hi + 1 if direction > 0 else n.lo - 1

    out: list[ExecClass] = []
    for a, b in zip(known, known[1:]):
        out.append(a)
        if a.hi + 1 < b.lo:
            if a.exact and b.exact:
                _fill_gap(prober, a, b, lo, hi, out)
            else:
                out.append(ExecClass(a.hi + 1, b.lo - 1, "unknown", None, exact=False))
    out.append(known[-1])
    return sorted(out, key=lambda c: c.lo)


def _fill_gap(prober: _Prober, left: ExecClass, right: ExecClass, lo: int, hi: int, out: list[ExecClass]) -> None:
    """Classify the budgets strictly between two exact classes (of the range [lo, hi])."""
    stack = [(left, right)]
    while stack:
        a, b = stack.pop()
        gap_lo, gap_hi = a.hi + 1, b.lo - 1
        if gap_lo > gap_hi:
            continue
        if a.status == b.status:
            out.append(ExecClass(gap_lo, gap_hi, a.status, None, exact=False))
            continue
        if prober.resolution_stopped:  # out of runs: say so rather than guess
            out.append(ExecClass(gap_lo, gap_hi, "mixed", None, exact=False))
            continue
        m = prober.probe((gap_lo + gap_hi) // 2, lo, hi)
        out.append(m)
        stack += [(a, m), (m, b)]


def hole_forensics(trace: engine.Trace, atlas: Atlas, hole: dict) -> dict:
    """Where the last ok class below a hole and the failing class part ways,
    and whether never evicting the storage the failing operator needed
    removes the failure (a retention intervention)."""
    kw = dict(heuristic=atlas.heuristic, cap=atlas.cap, events=True)
    ok = engine.simulate(trace, budget=hole["below_ok_budget"], **kw)
    bad = engine.simulate(trace, budget=hole["lo"], **kw)
    a, b = ok.eviction_sequence, bad.eviction_sequence
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    first = {
        "index": k,
        "ok_eviction": list(a[k]) if k < len(a) else None,
        "failing_eviction": list(b[k]) if k < len(b) else None,
    }
    if bad.fail is None:  # a thrashed class: no failing request to intervene on
        return {"hole": {k: hole[k] for k in ("lo", "hi")}, "first_difference": first, "fail": None,
                "retention": None, "status": bad.status}
    needed = trace.storage_of(bad.fail["tensor_id"])
    retained = engine.simulate(trace, budget=hole["lo"], heuristic=atlas.heuristic, cap=atlas.cap, retain=[needed])
    return {
        "hole": {k: hole[k] for k in ("lo", "hi")},
        "first_difference": first,
        "status": bad.status,
        "fail": {k: bad.fail[k] for k in ("model_op", "tensor_id", "tensor_name", "computing_op_name", "request",
                                          "pinned", "depth")},
        "retention": {"retained_storage": needed, "status": retained.status, "overhead": retained.overhead,
                      "oom_removed": retained.status != "oom"},
    }

def chunk_range(lo_budget: int, hi_budget: int, chunk: int, chunks: int) -> tuple[int, int]:
    """The ``chunk``-th of ``chunks`` consecutive byte ranges covering [lo, hi]."""
    n = hi_budget - lo_budget + 1
    a = lo_budget + n * chunk // chunks
    b = lo_budget + n * (chunk + 1) // chunks - 1
    return a, b


def holes_table(atlas: Atlas, forensics: list[dict] | None = None) -> list[dict]:
    """One row per hole: byte edges, ratios of the peak, and its forensics."""
    rows = []
    for i, h in enumerate(atlas.holes()):
        row = {
            "trace": atlas.trace, "heuristic": atlas.heuristic, "lo": h["lo"], "hi": h["hi"],
            "bytes_wide": h["hi"] - h["lo"] + 1, "lo_ratio": h["lo"] / atlas.peak, "hi_ratio": h["hi"] / atlas.peak,
            "below_ok_budget": h["below_ok_budget"], "above_ok_budget": h["above_ok_budget"],
            "statuses": "/".join(h["statuses"]), "exact": h["exact"],
        }
        if forensics:
            f = forensics[i]
            fail, ret = f["fail"] or {}, f["retention"] or {}
            row.update({
                "first_difference_index": f["first_difference"]["index"],
                "ok_eviction": str(f["first_difference"]["ok_eviction"]),
                "failing_eviction": str(f["first_difference"]["failing_eviction"]),
                "fail_model_op": fail.get("model_op"), "fail_tensor": fail.get("tensor_name"),
                "fail_operator": fail.get("computing_op_name"),
                "retained_storage": ret.get("retained_storage"),
                "retention_status": ret.get("status"), "retention_removes_oom": ret.get("oom_removed"),
            })
        rows.append(row)
    return rows
