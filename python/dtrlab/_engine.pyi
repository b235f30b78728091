"""Types of the Rust engine's binding (crates/dtr-py); shipped in the package.

``RunResult``'s properties are its fields in ``RunResult.FIELDS`` order, and
its constructor takes the same names: tests/test_result_class.py checks both
against the class (a new field is declared here as well as in
crates/dtr-py/src/result.rs).
"""

from typing import Any, ClassVar, Self, TypeVar, final

__all__ = [
    "Trace",
    "RunResult",
    "Session",
    "heuristic_catalogue",
    "budget_for_ratio",
    "_panic_for_test",
    "TraceError",
    "EngineError",
    "ENGINE_VERSION",
]

ENGINE_VERSION: str

class TraceError(ValueError):
    """A trace file is malformed (names the file and line)."""

class EngineError(RuntimeError):
    """The engine cannot perform a request."""

class RunResult:
    """One replay: what was run, what it did (the golden record), and beside
    the record the evicted storages and the event log. Immutable."""

    FIELDS: ClassVar[tuple[str, ...]]
    RUN_FIELDS: ClassVar[tuple[str, ...]]
    RECORD_FIELDS: ClassVar[tuple[str, ...]]

    def __new__(
        cls,
        *,
        trace: str,
        heuristic: str,
        ratio: float | None,
        cap: float | None,
        start: bool,
        seed: int,
        engine: str,
        status: str,
        budget: int | None,
        clock: int,
        model_compute: int,
        remat_compute: int,
        overhead: float | None,
        overhead_clock: float | None,
        max_memory: int,
        evictions: int,
        distinct_evicted: int,
        evictions_per_storage: float,
        heuristic_eval_count: int,
        peak_pinned: int,
        depth_at_peak_pinned: int,
        max_nesting_depth: int,
        model_ops: int,
        fail: dict[str, Any] | None,
        identical_budget_interval: tuple[int | None, int | None] | None,
        evicted_ids: tuple[tuple[int, int], ...],
        events_columns: dict[str, list[Any]] | None,
    ) -> Self: ...

    # What was run (RUN_FIELDS).
    @property
    def trace(self) -> str: ...
    @property
    def heuristic(self) -> str: ...
    @property
    def ratio(self) -> float | None: ...
    @property
    def cap(self) -> float | None: ...
    @property
    def start(self) -> bool: ...
    @property
    def seed(self) -> int: ...
    @property
    def engine(self) -> str: ...

    # What it did (RECORD_FIELDS).
    @property
    def status(self) -> str:
        """``ok``, ``oom`` or ``thrashed``."""
    @property
    def budget(self) -> int | None: ...
    @property
    def clock(self) -> int: ...
    @property
    def model_compute(self) -> int: ...
    @property
    def remat_compute(self) -> int: ...
    @property
    def overhead(self) -> float | None:
        """(model + remat compute) / model compute, for ok runs."""
    @property
    def overhead_clock(self) -> float | None:
        """clock / model compute, for ok runs."""
    @property
    def max_memory(self) -> int: ...
    @property
    def evictions(self) -> int: ...
    @property
    def distinct_evicted(self) -> int: ...
    @property
    def evictions_per_storage(self) -> float: ...
    @property
    def heuristic_eval_count(self) -> int: ...
    @property
    def peak_pinned(self) -> int: ...
    @property
    def depth_at_peak_pinned(self) -> int: ...
    @property
    def max_nesting_depth(self) -> int: ...
    @property
    def model_ops(self) -> int: ...
    @property
    def fail(self) -> dict[str, Any] | None:
        """The state at an out-of-memory failure, else None."""
    @property
    def identical_budget_interval(self) -> tuple[int | None, int | None] | None:
        """Budgets that replay identically: (lo, hi), None without a budget."""

    # Beside the record.
    @property
    def evicted_ids(self) -> tuple[tuple[int, int], ...]:
        """(storage id, times evicted) of every evicted storage, by id."""
    @property
    def events_columns(self) -> dict[str, list[Any]] | None:
        """The event log by column, or None unless events were recorded."""

    def to_dict(self, evicted_ids: bool = False) -> dict[str, Any]:
        """The golden record (tuples as lists); ``evicted_ids`` on request."""
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, Any]]: ...

_R = TypeVar("_R", bound=RunResult)

@final
class Trace:
    """A parsed trace, shared by every replay."""

    @staticmethod
    def parse(text: str | bytes, source: str, start: bool = False, memory_limit: int | None = None) -> Trace: ...
    @property
    def source(self) -> str: ...
    @property
    def n_ops(self) -> int: ...
    @property
    def n_tensors(self) -> int: ...
    @property
    def n_commands(self) -> int: ...
    def tensor_name(self, tensor_id: int) -> str: ...
    def storage_of(self, tensor_id: int) -> int: ...
    def op_name_of(self, tensor_id: int) -> str: ...
    def storage_size(self, storage_id: int) -> int: ...
    def schedule_table(self) -> tuple[list[int], list[int], list[int], int]:
        """``(kind, argument, line)`` per command (0 compute operator, 1 take a
        reference, 2 materialize and pin, 3 release) and the number of
        commands the lines make (the rest pin what is kept at the end)."""
    def op_table(self) -> tuple[list[int], list[int], list[bool]]:
        """Per operator: first output, number of outputs, constant or not."""
    def tensor_table(self) -> tuple[list[int], list[int]]:
        """Per tensor: its storage (root tensor id) and bytes (0 for an alias)."""
    def tensor_names(self) -> list[str]: ...
    def op_inputs(self, op: int) -> list[int]: ...
    def baseline(self) -> dict[str, int]:
        """``{"peak", "compute", "const", "bottleneck"}`` of the infinite-budget run."""
    def simulate(
        self,
        result_type: type[_R],
        *,
        key: str,
        start: bool,
        heuristic: str,
        cap: float | None,
        budget: int | None = None,
        ratio: float | None = None,
        seed: int = 0,
        retain: list[int] = ...,
        events: bool = False,
        explain: bool = False,
        self_check: bool = False,
        eager_regions: bool = False,
        memory_limit: int | None = None,
    ) -> _R: ...

@final
class Session:
    """A replay fed a command at a time (for ``dtrlab.runtime``); it stays on
    the thread that made it."""

    def __new__(
        cls,
        trace: Trace,
        *,
        key: str,
        start: bool,
        heuristic: str,
        cap: float | None,
        budget: int | None = None,
        ratio: float | None = None,
        seed: int = 0,
        retain: list[int] = ...,
        self_check: bool = False,
    ) -> Self: ...
    @property
    def position(self) -> int: ...
    @property
    def memory(self) -> int: ...
    @property
    def budget(self) -> int | None: ...
    @property
    def core_ns(self) -> int:
        """Nanoseconds spent in the core's ``advance`` so far, its new events
        copied out included (Python's call and conversions not counted)."""
    def advance(self, end: int) -> tuple[str, list[tuple[int, int, int]]]:
        """Replay up to command ``end``: the status and the new events
        ``(kind, storage, tensor)``, kind 0 evict, 1 evict on release, 2 rematerialize."""
    def set_memory_offset(self, offset: int) -> None: ...
    def resident(self, storage: int) -> bool: ...
    def kept_for_good(self, storage: int) -> bool: ...
    def external_refs(self, storage: int) -> int: ...
    def finish(self, result_type: type[_R]) -> _R: ...

def heuristic_catalogue() -> list[tuple[str, str, bool, bool, bool]]:
    """Every heuristic with its terms: ``(name, cost, size, staleness, random)``."""

def budget_for_ratio(peak: int, ratio: float) -> int:
    """``int(peak * ratio)``, exactly as the reference computes a budget."""

def _panic_for_test() -> None: ...
