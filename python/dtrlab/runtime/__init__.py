"""DTR for real: one training step of a stock PyTorch model under a byte
budget, with tensors really freed and recomputed, every decision the
engine's (optional extra ``capture``: PyTorch).

    from dtrlab import runtime
    from dtrlab.capture import Workload
    r = runtime.Runner(Workload(model, (x,), loss, optimizer))
    run = r.run(ratio=0.5)            # or budget=bytes
    run.status, run.result.overhead, run.memory["ledger_peak"], run.equal

    runtime.run_step(model, (x,), loss, optimizer, ratio=0.5)   # one step; raises OutOfMemory

or ``dtrlab run-dtr resnet50 --ratio 0.5 --json``.

How it works: the step is first captured as a trace (its *plan*; that run is
also the reference the results are compared with, bit for bit). Then the
step runs again from the same state under a dispatch mode
(:mod:`dtrlab.runtime.mode`) that feeds the engine the plan's commands as
the operators come, performs the evictions and rematerializations the engine
logs, and records the step once more, line by line against the plan. The
engine is the simulator's own replay (``dtrlab._engine.Session``: a
``simulate`` is the same session fed the whole trace), so with
``trigger="model"`` the runtime's evictions and rematerializations are
``simulate(plan, events=True)``'s, at every budget, and it runs out of
memory exactly where the simulator does.

Memory: the ledger (bytes of the storages the runtime holds for the engine,
:mod:`dtrlab.runtime.storages`) must equal the engine's bytes after every
operator; the C allocator's bytes and the process's peak are measured beside
it (:mod:`dtrlab.runtime.memory`). The stated transient: a recomputed buffer
is copied into its storage, so for a moment both exist
(``memory["transient_peak"]``).

Exactness needs a deterministic step: fixed threads and deterministic
algorithms (:func:`deterministic`), random operators rerun from their saved
generator state (:mod:`dtrlab.runtime.recipes`).
"""

from __future__ import annotations

import contextlib
import copy
import gc
import hashlib
from dataclasses import dataclass, field, fields
from time import perf_counter_ns
from typing import Any, Callable, Iterator, Sequence

try:
    import torch
except ImportError as e:  # the extra is optional
    raise ImportError("dtrlab.runtime needs PyTorch: pip install 'dtrlab[capture]'") from e
from torch.utils._python_dispatch import TorchDispatchMode

from dtrlab import _engine, arguments, engine
from dtrlab.capture import Workload, run_step as _step
from dtrlab.capture.costs import roofline
from dtrlab.capture.recorder import Recorder
from dtrlab.exceptions import OutOfMemory, OutsideRuntime, PlanMismatch, StepFailed, Thrashed
from dtrlab.runtime import memory as mem
from dtrlab.runtime.mode import TRIGGERS, DTRMode
from dtrlab.runtime.plan import Plan
from dtrlab.runtime.state import Snapshot, bitwise_differences, results

COSTS = ("model", "measured")


@contextlib.contextmanager
def deterministic(threads: int = 1) -> Iterator[None]:
    """Fixed intra-op threads and deterministic algorithms, as a rerun needs
    to give the first run's bytes; both put back afterwards."""
    arguments.integer("threads", threads, 1)
    before = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled())
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1])


class _PassThrough(TorchDispatchMode):
    """The no-op dispatch baseline: every operator through a Python mode
    that only runs it (and times it)."""

    def __init__(self) -> None:
        super().__init__()
        self.ns = 0
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        t0 = perf_counter_ns()
        out = func(*args, **(kwargs or {}))
        self.ns += perf_counter_ns() - t0
        self.calls += 1
        return out

    # (what run_step asks of a recorder)
    def sweep(self) -> None:
        pass

    def annotate(self, what: str) -> None:
        pass

    def finish(self) -> None:
        pass


@dataclass
class RuntimeRun:
    """One step under the runtime."""

    status: str
    budget: int | None
    ratio: float | None
    heuristic: str
    trigger: str
    costs: str
    #: The engine's record of the run (``dtrlab.SimResult``): with
    #: ``trigger="model"``, equal to ``simulate(plan, ...)``'s.
    result: Any
    loss: float | None
    #: Operator calls PyTorch made (the plan's lines name fewer: views of
    #: known storages, calls that make no tensor).
    calls: int
    #: Nanoseconds: the step's wall time, and within it the operators, the
    #: engine, the recomputations, and the runtime's own bookkeeping beyond
    #: the no-op dispatch baseline (when measured: see ``Runner.baseline``).
    timing: dict[str, int | None]
    #: Bytes: the budget's, the engine's peak, the ledger's peak (never above
    #: the budget), the ledger's peak with the recomputed buffers being
    #: copied into place (the stated transient: above the budget by at most
    #: one operator's outputs), the allocator's peak above its bytes at the
    #: start, the process's peak resident set (and above its start).
    memory: dict[str, int | None]
    #: What the runtime did, in order: ``("evict", storage)`` or ``("remat", tensor)``.
    performed: list[tuple[str, int]] = field(repr=False)
    #: Bitwise equal to the step without the runtime (loss, parameters,
    #: buffers, gradients, optimizer state); None when not checked or failed.
    equal: bool | None = None
    differences: list[str] = field(default_factory=list)
    failure: str | None = None
    ledger_mismatches: list[tuple[int, int, int]] = field(default_factory=list)
    #: sha256 of the command stream recorded under the runtime (checked line
    #: by line against the plan's; equal to the capture of the same step).
    stream_sha256: str | None = None
    #: Storages the runtime held that are still alive after the step
    #: without belonging to the model, its gradients, its optimizer or its
    #: inputs (0: nothing of the step leaks into the next).
    leaked: int = 0
    #: The exception an out-of-memory or thrashing run raised.
    error: Exception | None = field(default=None, repr=False, compare=False)

    def to_dict(self, events: bool = False) -> dict:
        d = {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self)
             if f.name not in ("result", "performed", "error")}
        d["overhead"] = self.result.overhead if self.result is not None else None
        d["engine"] = self.result.to_dict() if self.result is not None else None
        if events:
            d["events"] = [list(e) for e in self.performed]
        d["ledger_mismatches"] = [list(m) for m in self.ledger_mismatches]
        return d


class Runner:
    """A workload ready to run under budgets: its plan captured (the step
    run once without the runtime, the reference for its results) and its
    state saved, so that every run starts from the same state."""

    def __init__(self, workload: Workload, optimizer_step: bool = True, costs: str = "model") -> None:
        if not isinstance(workload, Workload):
            raise TypeError(f"workload must be a dtrlab.capture.Workload, not {type(workload).__name__}")
        arguments.boolean("optimizer_step", optimizer_step)
        self.costs = arguments.choice("costs", costs, COSTS)
        self.workload = workload
        self.optimizer_step = optimizer_step
        self.snapshot = Snapshot.take(workload.model, workload.optimizer)
        rec = Recorder(cost=roofline, measure=costs == "measured")
        t0 = perf_counter_ns()
        self.loss = self._step(rec, collect=True)
        self.plain_wall = perf_counter_ns() - t0
        self.plan = Plan(rec.text, source="plan.log", timed=costs == "measured")
        self.reference = results(workload.model, workload.optimizer)
        self.snapshot.restore(workload.optimizer)
        self._baseline: dict[str, int] | None = None

    def _step(self, mode, collect: bool = False) -> float:
        # (The plan's capture collects garbage first; the runs after it
        # start from there, with the collector off during the step.)
        w = self.workload
        return _step(mode, w.model, w.inputs, w.loss, w.optimizer, self.optimizer_step, collect=collect)

    @property
    def trace(self) -> engine.Trace:
        """The plan as the engine reads it (``dtrlab.simulate(runner.trace, ...)``)."""
        return self.plan.trace

    def baseline(self, repeat: int = 1) -> dict[str, int]:
        """The no-op dispatch baseline: the step under a mode that only runs
        each operator (the fastest of ``repeat`` runs), wall and operator time."""
        arguments.integer("repeat", repeat, 1)
        best = None
        for _ in range(repeat):
            self.snapshot.restore(self.workload.optimizer)
            m = _PassThrough()
            t0 = perf_counter_ns()
            self._step(m)
            wall = perf_counter_ns() - t0
            if best is None or wall < best["wall"]:
                best = {"wall": wall, "operators": m.ns, "calls": m.calls}
        self.snapshot.restore(self.workload.optimizer)
        self._baseline = best
        return best

    def session(self, budget: int | None = None, ratio: float | None = None,
                heuristic: str = engine.DEFAULT_HEURISTIC, cap: float | None = engine.DEFAULT_CAP,
                self_check: bool = False) -> _engine.Session:
        """The engine's session over the plan, as a run drives it (a
        command at a time); for benchmarks, the same session fed alone."""
        return _engine.Session(self.plan.trace._native, key=self.plan.trace.key, start=False,
                               heuristic=heuristic, cap=cap, budget=budget, ratio=ratio, self_check=self_check)

    def run(self, budget: int | None = None, ratio: float | None = None, heuristic: str = engine.DEFAULT_HEURISTIC,
            cap: float | None = engine.DEFAULT_CAP, trigger: str = "model", check: bool = True,
            strict: bool = False, self_check: bool = False, poll_allocator: bool = True) -> RuntimeRun:
        """The step under ``budget`` bytes or ``ratio`` of the plan's peak
        (neither: no budget). An out-of-memory or thrashing run is reported
        (``status``, ``failure``) and the model left as before it; an ok run
        leaves the model stepped. ``check`` compares the results with the
        step without the runtime, bit for bit; ``strict`` stops at the first
        ledger that differs from the engine's bytes; ``self_check`` has the
        engine verify its invariants after every command (slow);
        ``poll_allocator`` reads the C allocator's bytes after every operator
        (the ``allocator_peak``; tens of microseconds each on a large heap)."""
        if budget is not None and ratio is not None:
            raise arguments.BadArgument("give budget or ratio, not both")
        if budget is not None:
            budget = arguments.integer("budget", budget)
        if ratio is not None:
            ratio = arguments.real("ratio", ratio, 0.0, lo_open=True)
        arguments.choice("heuristic", heuristic, engine.HEURISTICS)
        cap = arguments.cap(cap)
        arguments.choice("trigger", trigger, TRIGGERS)
        for name, v in (("check", check), ("strict", strict), ("self_check", self_check),
                        ("poll_allocator", poll_allocator)):
            arguments.boolean(name, v)
        w = self.workload
        self.snapshot.restore(w.optimizer)
        session = self.session(budget=budget, ratio=ratio, heuristic=heuristic, cap=cap, self_check=self_check)
        mode = DTRMode(self.plan, session, trigger=trigger, measure=self.costs == "measured", strict=strict,
                       poll_allocator=poll_allocator)
        mem.reset_process_peak()
        resident = mem.process_resident()
        status, failure, loss, error = "ok", None, None, None
        t0 = perf_counter_ns()
        try:
            loss = self._step(mode)
        except StepFailed as e:
            status, failure, error = mode.failure[0], str(e), e
        finally:
            wall = perf_counter_ns() - t0
            homes = mode.homes
            held = homes.weak_refs()
            homes.release_all()
        if error is not None:
            error.__traceback__ = None  # (its frames hold the step's tensors)
            _let_go_of_the_abandoned_graph()
            self.snapshot.restore(w.optimizer)
        kept = _state_storages(w)
        leaked = sum(1 for key, ref in held if not ref.expired() and key not in kept)
        equal, differences = None, []
        if status == "ok" and check:
            differences = bitwise_differences(self.reference, results(w.model, w.optimizer, copy=False))
            if loss != self.loss:
                differences.insert(0, "loss")
            equal = not differences
        base = self._baseline
        bookkeeping = None
        if base is not None:
            dispatch = base["wall"] - base["operators"]
            bookkeeping = wall - mode.ns["operators"] - mode.ns["engine"] - mode.ns["recompute"] - dispatch
        return RuntimeRun(
            status=status, budget=session.budget, ratio=ratio, heuristic=heuristic, trigger=trigger,
            costs=self.costs, result=mode.result, loss=loss, calls=mode.calls,
            timing={"wall": wall, **mode.ns, "engine_core": session.core_ns, "bookkeeping": bookkeeping,
                    "baseline_wall": base["wall"] if base else None,
                    "baseline_operators": base["operators"] if base else None,
                    "plain_wall": self.plain_wall},
            memory={"budget": session.budget, "engine_peak": mode.result.max_memory if mode.result else None,
                    "ledger_peak": homes.peak, "transient_peak": max(homes.peak, homes.transient_peak),
                    "allocator_peak": mode.allocator.peak if mode.allocator.available and mode.poll_allocator
                    else None,
                    "process_peak": mem.process_peak(),
                    "process_peak_above_start": None if resident is None or mem.process_peak() is None
                    else mem.process_peak() - resident},
            performed=homes.log, equal=equal, differences=differences, failure=failure,
            ledger_mismatches=mode.ledger_mismatches,
            stream_sha256=hashlib.sha256(mode.text.encode()).hexdigest() if status == "ok" else None,
            leaked=leaked, error=error)


def _let_go_of_the_abandoned_graph() -> None:
    """PyTorch frees the autograd graph of a step an exception abandoned
    only when it next runs a backward pass (measured: all of it stays alive
    until then, whatever holds no reference to it): run a trivial one."""
    x = torch.zeros((), requires_grad=True)
    (x * 1).backward()
    gc.collect()


def _state_storages(w: Workload) -> set[int]:
    """The storages a step leaves with its caller: the model's parameters,
    buffers and gradients, the optimizer's state, the inputs and the
    tensors the loss function holds (a target)."""
    held = []
    for cell in getattr(w.loss, "__closure__", None) or ():
        try:
            if isinstance(cell.cell_contents, torch.Tensor):
                held.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    ts = [*w.model.parameters(), *w.model.buffers(), *(p.grad for p in w.model.parameters() if p.grad is not None),
          *(t for t in w.inputs if isinstance(t, torch.Tensor)), *held]
    if w.optimizer is not None:
        ts += [v for st in w.optimizer.state.values() for v in st.values() if isinstance(v, torch.Tensor)]
    return {t.untyped_storage()._cdata for t in ts}


def run_step(model: torch.nn.Module, inputs: Sequence[Any], loss: Callable[[Any], torch.Tensor],
             optimizer: torch.optim.Optimizer | None = None, *, budget: int | None = None,
             ratio: float | None = None, heuristic: str = engine.DEFAULT_HEURISTIC,
             cap: float | None = engine.DEFAULT_CAP, optimizer_step: bool = True) -> RuntimeRun:
    """One training step of ``model`` under the runtime (planned first).
    Raises :class:`OutOfMemory` or :class:`Thrashed` (the model as before
    the step) where the budget cannot hold it."""
    r = Runner(Workload(model, inputs, loss, optimizer), optimizer_step=optimizer_step)
    run = r.run(budget=budget, ratio=ratio, heuristic=heuristic, cap=cap)
    if run.error is not None:
        raise run.error
    return run


__all__ = ["COSTS", "TRIGGERS", "OutOfMemory", "OutsideRuntime", "PlanMismatch", "Runner", "RuntimeRun",
           "StepFailed", "Thrashed", "deterministic", "run_step"]
