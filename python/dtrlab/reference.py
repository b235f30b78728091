"""The reference engine: replays with the original simulator ``simrd``.

simrd (public repository ``uwsampl/dtr-prototype``, folder ``simrd``, pinned
commit below) is never part of this project; point ``DTRLAB_SIMRD`` (or the
``simrd`` key of the pipeline config) at a checkout and it is imported from
there. We drive its runtime ``RuntimeV2EagerOptimized`` command by command
and observe it with decision-neutral bookkeeping only:

* the budget is an object that compares exactly like the integer budget but
  records every comparison (the identical-budget interval) and samples the
  pinned bytes at each decision comparison (evictions leave pinned bytes
  unchanged, so this equals sampling once before each operator's check);
* the evictable pool is a list that keeps its byte total;
* wrappers count materialization depth, evictions and rematerializations.

The result is the native engine's class (:class:`dtrlab.engine.SimResult`).
"""

from __future__ import annotations

import importlib
import hashlib
import math
import os
import random
import sys
import threading
from pathlib import Path
from typing import Any

from dtrlab import _engine, engine
from dtrlab.config import defaults
from dtrlab.exceptions import ReferenceUnavailable
from dtrlab.traces import ARTIFACT_COMMIT

SIMRD_REPO = "uwsampl/dtr-prototype"
#: The commit the traces come from, too.
SIMRD_COMMIT = ARTIFACT_COMMIT
SIMRD_ENV = "DTRLAB_SIMRD"
RUNTIME = "RuntimeV2EagerOptimized"

# simrd recurses once per nested rematerialization (depth ~900 on slow LSTM
# points, far deeper on synthetic chains): give it room.
_STACK_BYTES = 1 << 30
_RECURSION = 1_000_000


def locate(path: str | os.PathLike | None = None) -> Path:
    """The folder to put on ``sys.path`` so that ``import simrd`` works.

    Accepts the repository root, its ``simrd`` folder, or the package itself.
    """
    raw = path or os.environ.get(SIMRD_ENV)
    if not raw:
        raise ReferenceUnavailable(
            f"the reference simulator is not configured: set {SIMRD_ENV} to a checkout of "
            f"{SIMRD_REPO} at {SIMRD_COMMIT[:8]}"
        )
    p = Path(raw).expanduser().resolve()
    for candidate in (p / "simrd", p, p.parent):
        if (candidate / "simrd" / "runtime" / "v2.py").is_file():
            return candidate
    raise ReferenceUnavailable(f"{raw}: no simrd package found there ({SIMRD_ENV})")


def _import_simrd(path: str | os.PathLike | None):
    root = str(locate(path))
    if root not in sys.path:
        sys.path.insert(0, root)
    parse = importlib.import_module("simrd.parse")
    heuristic = importlib.import_module("simrd.heuristic")
    ablation = importlib.import_module("simrd.heuristic.ablation")
    runtime = importlib.import_module("simrd.runtime")
    return parse, (heuristic, ablation), runtime


class _Observer:
    """Everything we record about one reference run."""

    def __init__(self) -> None:
        self.fit_max: int | None = None
        self.nofit_min: int | None = None
        self.depth = 0
        self.max_depth = 0
        self.peak_pinned = 0
        self.depth_at_peak = 0
        self.model_ops = 0
        self.last_requested = None
        self.last_decision: tuple | None = None  # (value, depth, tensor being computed)
        self.computing: list = []  # materializations in progress, innermost last
        self.evictions: dict[int, int] = {}
        self.n_evictions = 0
        self.events: dict[str, list] | None = None


class _ObservedBudget:
    """Compares like ``int(value)``; records each comparison made against it."""

    def __init__(self, value: int, obs: _Observer, runtime_ref: list):
        self.value = value
        self.obs = obs
        self.rt = runtime_ref

    def _pinned(self) -> int:
        rt = self.rt[0]
        return rt.memory_usage - rt.storage_pool.bytes

    def __lt__(self, x):  # evaluates `x > budget`: the decision comparisons
        o = self.obs
        fits = not (x > self.value)
        if fits:
            o.fit_max = x if o.fit_max is None else max(o.fit_max, x)
        else:
            o.nofit_min = x if o.nofit_min is None else min(o.nofit_min, x)
        pinned = self._pinned()
        if pinned > o.peak_pinned:
            o.peak_pinned, o.depth_at_peak = pinned, o.depth
        o.last_decision = (x, o.depth, o.computing[-1] if o.computing else None)
        return not fits

    def __ge__(self, x):  # evaluates `x <= budget` (the reference's own assertion)
        return x <= self.value

    def __gt__(self, x):
        return self.value > x

    def __le__(self, x):
        return self.value <= x


class _BytePool(list):
    """The evictable pool, keeping the total size of its members that may be
    evicted (retained storages count as pinned, as in the native engine)."""

    def __init__(self, retain: frozenset[int]) -> None:
        super().__init__()
        self.bytes = 0
        self.retain = retain

    def append(self, s) -> None:
        super().append(s)
        if s.root_id not in self.retain:
            self.bytes += s.size

    def remove(self, s) -> None:
        super().remove(s)
        if s.root_id not in self.retain:
            self.bytes -= s.size


def _observed_runtime(runtime_mod, obs: _Observer, retain: frozenset[int]):
    base = getattr(runtime_mod, RUNTIME)
    lazy = base.__mro__[1]  # the same runtime without eager eviction

    class Observed(base):
        def _materialize(self, t, rematerialize=True):
            obs.depth += 1
            obs.max_depth = max(obs.max_depth, obs.depth)
            obs.last_requested = t
            obs.computing.append(t)
            try:
                return super()._materialize(t, rematerialize=rematerialize)
            finally:
                obs.depth -= 1
                obs.computing.pop()

        def _evict(self, s):
            super()._evict(s)
            obs.n_evictions += 1
            obs.evictions[s.root_id] = obs.evictions.get(s.root_id, 0) + 1
            if obs.events is not None:
                kind = "evict" if obs.depth > 0 else "eager_evict"
                _event(obs, kind, s.root_id, s.root_id, s.size, self)

        def _compute(self, t, rematerialize=True):
            out = super()._compute(t, rematerialize=rematerialize)
            if rematerialize and obs.events is not None:
                _event(obs, "remat", t.storage.root_id, t.id, t.op.total_size, self)
            return out

        def release(self, t):
            if t.storage.root_id in retain:
                return lazy.release(self, t)
            return super().release(t)

    return Observed


def _event(obs: _Observer, kind: str, storage: int, tensor: int, size: int, rt) -> None:
    ev = obs.events
    ev["kind"].append(kind)
    ev["model_op"].append(obs.model_ops)
    ev["depth"].append(obs.depth)
    ev["storage_id"].append(storage)
    ev["tensor_id"].append(tensor)
    ev["size"].append(size)
    ev["pinned"].append(rt.memory_usage - rt.storage_pool.bytes)
    ev["clock"].append(rt.clock)


class _RetainingHeuristic:
    """Offers the wrapped heuristic only non-retained pool members."""

    def __init__(self, inner, retain: frozenset[int]):
        self.inner = inner
        self.retain = retain
        self.FEATURES = inner.FEATURES

    def choose(self, pool, rt, **kwargs):
        allowed = [s for s in pool if s.root_id not in self.retain]
        if not allowed:
            rt.OOM = True
            raise MemoryError()
        return self.inner.choose(allowed, rt, **kwargs)


def _replay(graph, rt, obs: _Observer) -> None:
    """Issue the schedule's commands to the runtime, counting model operators."""
    parse = sys.modules["simrd.parse.graph"]
    from simrd.tensor import Operator

    tensors: dict[str, Any] = {}
    for cmd in graph.schedule:
        if isinstance(cmd, parse.GCompute):
            obs.model_ops += 1
            op = cmd.op
            args = [tensors[x.name] for x in op.args]
            rt_op = Operator(op.cost, op.size, op.alias, op.name)
            outs = rt.compute(args, rt_op, names=tuple(r.name for r in op.result))
            for r, out in zip(op.result, outs):
                tensors[r.name] = out
        elif isinstance(cmd, parse.GGet):
            t = tensors[cmd.tensor.name]
            if cmd.pin:
                if not t.defined:
                    rt.rematerialize(t)
                rt.pin(t)
            else:
                rt.get(t)
        elif isinstance(cmd, parse.GRelease):
            rt.release(tensors[cmd.tensor.name])


def _run(path, start, budget, heuristic_name, remat_limit, retain, events, simrd_path):
    parse_mod, heuristic_mod, runtime_mod = _import_simrd(simrd_path)
    with open(path) as f:
        graph = parse_mod.parse_file(f, start=start)
    obs = _Observer()
    if events:
        obs.events = {k: [] for k in ("kind", "model_op", "depth", "storage_id", "tensor_id", "size", "pinned", "clock")}
    main, ablation = heuristic_mod
    heuristic = getattr(main, heuristic_name, None) or getattr(ablation, heuristic_name)
    heuristic = heuristic()
    if retain:
        heuristic = _RetainingHeuristic(heuristic, retain)
    rt_ref: list = []
    limit = budget if budget is None else _ObservedBudget(budget, obs, rt_ref)
    Observed = _observed_runtime(runtime_mod, obs, retain)
    rt = Observed(math.inf if limit is None else limit, heuristic, remat_limit=remat_limit)
    rt.storage_pool = _BytePool(retain)
    rt_ref.append(rt)
    status, fail = "ok", None
    try:
        _replay(graph, rt, obs)
    except MemoryError:
        status = "oom"
        value, depth, computing = obs.last_decision
        pinned = rt.memory_usage - rt.storage_pool.bytes
        t = obs.last_requested
        request = value - rt.memory_usage
        fail = {
            "pinned": pinned,
            "request": request,
            "depth": depth,
            "over_by": value - budget,
            "model_op": obs.model_ops,
            "tensor_id": t.id,
            "tensor_name": t.name,
            "computing_tensor_id": computing.id,
            "computing_tensor_name": computing.name,
            "computing_op_name": computing.op.name,
            "held": _held(rt, obs, retain),
        }
    except runtime_mod.runtime.RematExceededError:
        status = "thrashed"
    return rt, obs, status, fail


def _held(rt, obs: _Observer, retain: frozenset[int]) -> list[tuple[int, int, bool]]:
    """Resident storages outside the evictable pool (or retained), by id."""
    pool = {id(s) for s in rt.storage_pool}
    storages = {t.storage.root_id: t.storage for t in rt.tensor_map.values()}
    return [(sid, s.size, bool(s.pinned)) for sid, s in sorted(storages.items())
            if s.material and (id(s) not in pool or sid in retain)]


def _in_big_thread(fn, *args):
    """Run ``fn`` in a thread with a deep stack and recursion limit."""
    box: dict[str, Any] = {}

    def target():
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # re-raised in the caller
            box["error"] = e

    old_limit = sys.getrecursionlimit()
    old_stack = threading.stack_size()
    sys.setrecursionlimit(max(old_limit, _RECURSION))
    try:
        threading.stack_size(_STACK_BYTES)
        th = threading.Thread(target=target, name="simrd")
        th.start()
        th.join()
    finally:
        threading.stack_size(old_stack)
        sys.setrecursionlimit(old_limit)
    if "error" in box:
        raise box["error"]
    return box["value"]


def baseline(path, start=False, simrd_path=None) -> dict[str, int]:
    """peak, compute, const and bottleneck of the reference's infinite-budget run."""
    rt, _, _, _ = _in_big_thread(_run, path, start, None, "LRU", math.inf, frozenset(), False, simrd_path)
    s = rt.telemetry.summary
    return {"peak": s["max_memory"], "compute": s["model_compute"], "const": s["model_const_memory"],
            "bottleneck": s["bottleneck_memory"]}


ARCHIVE_URL = f"https://github.com/{SIMRD_REPO}/archive/{SIMRD_COMMIT}.tar.gz"
#: Digest of the ``simrd`` package at the pinned commit (:func:`package_digest`
#: of its 19 ``.py`` files): the archive GitHub builds is not byte-stable, its
#: content is.
SIMRD_PACKAGE_SHA256 = "6c7727c6c6ad5caa30efaf34132ba0e3e86af344144d534f4ed2ce396c5f0c15"
#: Read no more than this of the repository archive (it is a few MB).
ARCHIVE_LIMIT = 256 * 2**20


def package_digest(files: list[tuple[str, bytes]]) -> str:
    """sha256 over the sorted ``path NUL sha256(content)`` lines of a package's
    files (paths relative to the package's parent, with ``/``)."""
    h = hashlib.sha256()
    for rel, content in sorted(files):
        h.update(f"{rel}\0{hashlib.sha256(content).hexdigest()}\n".encode())
    return h.hexdigest()


def fetch(dest: str | os.PathLike, url: str = ARCHIVE_URL, retries: int | None = None,
          package_sha256: str = SIMRD_PACKAGE_SHA256) -> Path:
    """Download the reference at the pinned commit and unpack its ``simrd``
    package into ``dest`` (usable as ``DTRLAB_SIMRD``), once its content
    matches ``package_sha256``: otherwise nothing is written. Machines with
    internet only; nothing of it is ever part of this repository."""
    import io
    import tarfile

    from dtrlab.atomic import write_bytes
    from dtrlab.traces import DEFAULT_RETRIES, _read_source

    dest = Path(dest)
    data = _read_source(url, DEFAULT_RETRIES if retries is None else retries, timeout=120, limit=ARCHIVE_LIMIT)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        commit = tar.pax_headers.get("comment", "")
        if commit and commit != SIMRD_COMMIT:
            raise ReferenceUnavailable(f"{url}: archive of commit {commit}, expected {SIMRD_COMMIT}")
        members = []
        for m in tar.getmembers():
            parts = Path(m.name).parts
            # No member may point outside the folder it unpacks into: the
            # whole archive is refused before anything is written.
            if Path(m.name).is_absolute() or ".." in parts:
                raise ReferenceUnavailable(f"{url}: member {m.name[:200]!r} points outside the archive; "
                                           "nothing was written")
            # <top>/simrd/simrd/... : the package only (regular files, no links)
            if len(parts) > 3 and parts[1:3] == ("simrd", "simrd") and m.isfile() and m.name.endswith(".py"):
                members.append((Path(*parts[2:]), tar.extractfile(m).read()))
    if not members:
        raise ReferenceUnavailable(f"{url}: no simrd package in the archive")
    digest = package_digest([(rel.as_posix(), content) for rel, content in members])
    if digest != package_sha256:
        raise ReferenceUnavailable(f"{url}: the simrd package's digest is {digest}, expected {package_sha256} "
                                   f"(commit {SIMRD_COMMIT[:8]}); nothing was written")
    for rel, content in members:
        write_bytes(dest / rel, content)
    return dest


def simulate(
    path,
    start: bool = False,
    budget: int | None = None,
    ratio: float | None = None,
    heuristic: str = defaults()["engine"]["heuristic"],
    cap: float | None = defaults()["engine"]["cap"],
    seed: int = 0,
    retain=(),
    events: bool = False,
    simrd_path=None,
    baseline_figures: dict[str, int] | None = None,
) -> engine.SimResult:
    """One reference replay, as the native engine's result class.

    ``RandomStorage`` draws from Python's ``random`` seeded with ``seed``, so
    its runs are reproducible but differ from the native engine's stream.
    ``baseline_figures`` (from :func:`baseline`) saves the infinite-budget run
    when replaying many budgets of one trace.
    """
    base = baseline_figures or baseline(path, start, simrd_path)
    if budget is None:
        budget = _engine.budget_for_ratio(base["peak"], ratio)  # the engine's rule, int(peak * ratio)
    remat_limit = math.inf if cap is None else base["compute"] * (cap - 1)
    random.seed(seed)
    rt, obs, status, fail = _in_big_thread(
        _run, path, start, budget, heuristic, remat_limit, frozenset(int(r) for r in retain), events, simrd_path
    )
    s = rt.telemetry.summary
    model, remat = s["model_compute"], s["remat_compute"]
    ok = status == "ok" and model > 0  # overhead is undefined without model compute
    distinct = len(obs.evictions)
    return engine.SimResult(
        trace=engine.trace_key(path),
        heuristic=heuristic,
        ratio=ratio,
        cap=cap,
        start=start,
        seed=seed,
        engine="simrd",
        status=status,
        budget=budget,
        clock=rt.clock,
        model_compute=model,
        remat_compute=remat,
        overhead=(model + remat) / model if ok else None,
        overhead_clock=rt.clock / model if ok else None,
        max_memory=s["max_memory"],
        evictions=obs.n_evictions,
        distinct_evicted=distinct,
        evictions_per_storage=obs.n_evictions / distinct if distinct else 0.0,
        heuristic_eval_count=s["heuristic_eval_count"],
        peak_pinned=obs.peak_pinned,
        depth_at_peak_pinned=obs.depth_at_peak,
        max_nesting_depth=obs.max_depth,
        model_ops=obs.model_ops,
        fail=fail,
        identical_budget_interval=(obs.fit_max, None if obs.nofit_min is None else obs.nofit_min - 1),
        evicted_ids=tuple(sorted(obs.evictions.items())),
        events_columns=obs.events,
    )
