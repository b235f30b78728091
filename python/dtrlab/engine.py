"""The engine's Python API: load a trace, compute its baseline, replay it.

    >>> import dtrlab
    >>> t = dtrlab.load_trace("resnet32")
    >>> dtrlab.simulate(t, ratio=0.104).status
    'oom'

Results use the golden records' field names (``SimResult.to_dict()``).
``engine="simrd"`` replays with the reference simulator instead (see
:mod:`dtrlab.reference`), returning the same class.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

from dtrlab import _engine, arguments
from dtrlab.config import defaults
from dtrlab.traces import TRACE_FILES, resolve_trace

TRACE_KEY_OF_FILE = {f: k for k, f in TRACE_FILES.items()}

ENGINE_VERSION: str = _engine.ENGINE_VERSION


def trace_key(path: str | os.PathLike) -> str:
    """The trace key (``lstm``, ...) of a public trace file, else the file's stem."""
    p = Path(path)
    return TRACE_KEY_OF_FILE.get(p.name, p.stem)


@dataclass(frozen=True)
class HeuristicTerms:
    """A heuristic's score terms, as the engine defines them: the cost term
    (``e*``, ``eq``, ``local``, ``msps``, ``none``; ``lru``, ``random``),
    whether it divides by size and by staleness, and whether it draws at
    random (the only heuristics a seed changes)."""

    cost: str
    size: bool
    staleness: bool
    random: bool


#: Every heuristic the engine accepts (simrd's names), with its terms.
HEURISTIC_TERMS: dict[str, HeuristicTerms] = {
    name: HeuristicTerms(cost, size, staleness, random)
    for name, cost, size, staleness, random in _engine.heuristic_catalogue()
}
HEURISTICS: tuple[str, ...] = tuple(HEURISTIC_TERMS)
RANDOM_HEURISTICS: tuple[str, ...] = tuple(n for n, t in HEURISTIC_TERMS.items() if t.random)
#: The paper's overhead cap (remat_limit = compute * (cap - 1)) and
#: heuristic: the configuration schema's defaults (``engine.cap``, ``engine.heuristic``).
DEFAULT_CAP: float = defaults()["engine"]["cap"]
DEFAULT_HEURISTIC: str = defaults()["engine"]["heuristic"]


def budget_for_ratio(peak: int, ratio: float) -> int:
    """``int(peak * ratio)``: the budget of a ratio, as the reference computes
    it (the engine's one definition, which ``simulate(ratio=...)`` uses)."""
    return _engine.budget_for_ratio(arguments.integer("peak", peak, 0), arguments.real("ratio", ratio, 0.0))


class Trace:
    """A parsed trace (immutable; share it between runs and threads)."""

    def __init__(self, native: _engine.Trace, path: Path, start: bool):
        self._native = native
        self.path = path
        self.start = start

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def key(self) -> str:
        """The trace key (``lstm``, ...) for a public trace, else the file stem."""
        return trace_key(self.path)

    @property
    def n_ops(self) -> int:
        return self._native.n_ops

    @property
    def n_tensors(self) -> int:
        return self._native.n_tensors

    def tensor_name(self, tensor_id: int) -> str:
        return self._native.tensor_name(arguments.integer("tensor_id", tensor_id, 0, arguments.U32))

    def storage_of(self, tensor_id: int) -> int:
        return self._native.storage_of(arguments.integer("tensor_id", tensor_id, 0, arguments.U32))

    def storage_size(self, storage_id: int) -> int:
        return self._native.storage_size(arguments.integer("storage_id", storage_id, 0, arguments.U32))

    def op_name_of(self, tensor_id: int) -> str:
        return self._native.op_name_of(arguments.integer("tensor_id", tensor_id, 0, arguments.U32))

    def __repr__(self) -> str:
        return f"Trace({self.name!r}, ops={self.n_ops}, start={self.start})"


def load_trace(path: str | os.PathLike, start: bool = False, memory_limit: int | None = None) -> Trace:
    """Parse a trace file, or a trace key such as ``"lstm"`` (fetched if needed).

    Raises :class:`dtrlab.TraceError` naming the file and line on bad input,
    and :class:`dtrlab.EngineError` once the engine holds more than
    ``memory_limit`` bytes (default: as for :func:`simulate`).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise arguments.BadArgumentType(f"path must be a trace file or key, not {type(path).__name__} ({path!r})")
    arguments.boolean("start", start)
    if memory_limit is not None:
        memory_limit = arguments.integer("memory_limit", memory_limit, lo=1)
    p = resolve_trace(path)
    # The engine reads the bytes in place (and checks they are UTF-8): no
    # decoded copy of a large file.
    return Trace(_engine.Trace.parse(p.read_bytes(), p.name, start, memory_limit), p, start)


def _as_trace(trace: Trace | str | os.PathLike, start: bool = False) -> Trace:
    return trace if isinstance(trace, Trace) else load_trace(trace, start=start)


@dataclass(frozen=True)
class Baseline:
    """Figures of the infinite-budget replay."""

    peak: int
    compute: int
    const: int
    bottleneck: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def baseline(trace: Trace | str | os.PathLike, engine: str = "native") -> Baseline:
    """Peak memory (the reference for budget ratios), compute, const, bottleneck."""
    t = _as_trace(trace)
    if engine == "simrd":
        from dtrlab import reference

        return Baseline(**reference.baseline(t.path, start=t.start))
    if engine != "native":
        raise ValueError(f"unknown engine {engine!r} (native or simrd)")
    return Baseline(**t._native.baseline())


class SimResult(_engine.RunResult):
    """One replay. ``status`` is ``ok``, ``oom`` or ``thrashed``.

    Its fields, constructor, equality and ``to_dict()`` are the binding's
    (:class:`dtrlab._engine.RunResult`, declared once there; typed in
    ``_engine.pyi``): both engines build this class. Here: what needs Python.
    """

    __slots__ = ()  # no instance dict: the fields stay immutable
    __match_args__ = _engine.RunResult.FIELDS  # positional patterns, as a dataclass's

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def evictions_by_storage(self) -> dict[int, int]:
        """Storage id -> times evicted (evicted storages only)."""
        return dict(self.evicted_ids)

    @property
    def events(self):
        """Every eviction and rematerialization as a pandas DataFrame, or None."""
        if self.events_columns is None:
            return None
        import pandas as pd

        if "candidates" in self.events_columns:
            # Decision columns are empty where an event is no heuristic
            # eviction: nullable integers keep their terms exact.
            import pyarrow as pa

            nullable = {pa.int64(): pd.Int64Dtype(), pa.null(): pd.Int64Dtype(), pa.float64(): pd.Float64Dtype()}
            return self.events_arrow().to_pandas(types_mapper=nullable.get)
        return pd.DataFrame(self.events_columns)

    def events_arrow(self):
        """The event log as a pyarrow Table (columnar, zero-copy to Parquet), or None."""
        if self.events_columns is None:
            return None
        import pyarrow as pa

        return pa.table(self.events_columns)

    @property
    def eviction_sequence(self) -> list[tuple[int, int]] | None:
        """``(model_op, storage_id)`` of every eviction in order (needs events)."""
        ev = self.events_columns
        if ev is None:
            return None
        return [(m, s) for k, m, s in zip(ev["kind"], ev["model_op"], ev["storage_id"]) if k != "remat"]

    def digest(self) -> str:
        """sha256 of the canonical JSON of every decision-relevant figure."""
        blob = json.dumps(self.to_dict(evicted_ids=True), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


#: What a run was (set by the caller), then what it did: the golden record's
#: fields in their order. Both are the binding's (``_engine.RunResult``).
RUN_FIELDS: tuple[str, ...] = _engine.RunResult.RUN_FIELDS
RESULT_FIELDS: tuple[str, ...] = _engine.RunResult.RECORD_FIELDS


def simulate(
    trace: Trace | str | os.PathLike,
    budget: int | None = None,
    ratio: float | None = None,
    heuristic: str = DEFAULT_HEURISTIC,
    cap: float | None = DEFAULT_CAP,
    seed: int | None = None,
    retain: Iterable[int] = (),
    events: bool = False,
    explain: bool = False,
    engine: str = "native",
    start: bool = False,
    self_check: bool = False,
    eager_regions: bool = False,
    memory_limit: int | None = None,
) -> SimResult:
    """Replay ``trace`` under ``budget`` bytes or ``ratio`` of the baseline peak.

    ``cap=None`` removes the overhead cap. ``seed`` seeds ``RandomStorage``
    (default 0). ``retain`` lists storage ids that are never evicted.
    ``events=True`` records every eviction and rematerialization.
    ``explain=True`` (native engine; implies ``events``) adds to each
    heuristic eviction its decision: the victim's score and terms, the
    number of candidates, and the runner-up (the candidate the heuristic picks
    without the victim) with its score and terms (see
    :mod:`dtrlab.analysis.decisions`). Slower, same result.
    ``start`` applies only when ``trace`` is a path or key. ``self_check``
    makes the native engine verify its invariants after every command (slow;
    a violation raises :class:`dtrlab.EngineError`). ``eager_regions`` makes
    it rebuild every evicted-neighbourhood region as soon as it changes and
    score every candidate, as the reference orders its work: the same result,
    slower (an oracle for tests). The native engine stops with
    :class:`dtrlab.EngineError` once it holds more than ``memory_limit``
    bytes (default: half of what the process may still take when the replay
    starts), instead of letting the system refuse memory and abort.
    """
    if (budget is None) == (ratio is None):
        raise ValueError("give exactly one of budget (bytes) or ratio (of the baseline peak)")
    if budget is not None:
        budget = arguments.integer("budget", budget)
    if ratio is not None:
        ratio = arguments.real("ratio", ratio, 0.0, lo_open=True)
    arguments.choice("heuristic", heuristic, HEURISTICS)
    cap = arguments.cap(cap)
    seed = 0 if seed is None else arguments.integer("seed", seed)
    retain = arguments.storage_ids("retain", retain)
    arguments.boolean("events", events)
    arguments.boolean("explain", explain)
    arguments.boolean("start", start)
    arguments.boolean("self_check", self_check)
    arguments.boolean("eager_regions", eager_regions)
    if memory_limit is not None:
        memory_limit = arguments.integer("memory_limit", memory_limit, lo=1)
    arguments.choice("engine", engine, ("native", "simrd"))
    if explain and engine != "native":
        raise ValueError("explain=True is the native engine's (the reference keeps no decisions)")
    t = _as_trace(trace, start=start)
    if engine == "native":
        return t._native.simulate(
            SimResult,
            key=t.key,
            start=t.start,
            budget=budget,
            ratio=ratio,
            heuristic=heuristic,
            cap=cap,
            seed=seed,
            retain=retain,
            events=events,
            explain=explain,
            self_check=self_check,
            eager_regions=eager_regions,
            memory_limit=memory_limit,
        )
    if engine == "simrd":
        from dtrlab import reference

        return reference.simulate(
            t.path, start=t.start, budget=budget, ratio=ratio, heuristic=heuristic, cap=cap, seed=seed,
            retain=tuple(retain), events=events,
        )
    raise ValueError(f"unknown engine {engine!r} (native or simrd)")
