"""Record what stock PyTorch runs as a DTR trace (the log format the engine
and simrd read), through ``TorchDispatchMode``: no fork of PyTorch, no C++.

What becomes what (the format's domain is narrower than PyTorch's; each
mapping below keeps a trace inside it, see docs ENGINE-SEMANTICS §1):

- **Tensors** are PyTorch's tensor objects at the C++ level (``TensorImpl``),
  named ``x0, x1, ...`` in order of first appearance. A tensor whose storage
  is new owns it (``ALIAS -1``, ``MEMORY`` = the storage's bytes); a tensor
  that shares an input's storage is an alias of that input (``ALIAS 0``).
- **Constants**: a tensor an operator reads that no recorded operator made
  (parameters, the batch, optimizer state made before the step) becomes a
  ``CONSTANT`` at its first use. One that shares the storage of a tensor
  already in the trace becomes a zero-cost ``alias`` call of that tensor
  instead, so the storage is counted once.
- **Views**: the format lets only single-argument operators return aliases,
  of argument 0. A view operator's output is recorded with its aliased tensor
  as the only argument (other tensor arguments of a view, rare, are dropped
  from ``ARGS``).
- **In-place operators** (a write to an argument, per the operator's schema)
  are ``MUTATE`` of argument 0, the written tensor first in ``ARGS``. One that
  writes several tensors (the optimizers' ``_foreach_*_`` kernels) is split
  into one ``MUTATE`` per written tensor, with the arguments at the same
  position of the other tensor lists, and the cost divided evenly. The format
  gives the written result a new storage of the same size and frees the old
  one after the operator: the replay's memory is higher than PyTorch's by that
  storage during the operator (and a constant, which the format pins, stays
  resident beside its new value).
- **Releases** are real: after every operator the recorder asks which tensors
  PyTorch has freed since (weak references to the ``TensorImpl``) and writes
  a ``RELEASE`` for each, in the order they were named; what is still alive at
  the end is released by no line, so the replay keeps it (as the format's
  "outputs").
- **Costs** come from a cost model (:mod:`dtrlab.capture.costs`), or measured
  wall time on request; either way an integer ``TIME`` per operator.

Operators that make no tensor (profiler markers) and outputs that are an
input tensor itself returned unchanged are not recorded.
"""

from __future__ import annotations

import functools
import json
import re
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.multiprocessing.reductions import StorageWeakRef

from dtrlab.capture import flat
from dtrlab.exceptions import CaptureError


_PLAIN = re.compile(r"[A-Za-z0-9_.$-]*\Z")


def _line(**fields) -> str:
    # The public traces' shape: sorted keys, no spaces, numbers as strings.
    # Names and numbers need no escaping, and most lines are written as
    # json.dumps would write them without its cost (a few per operator).
    parts = []
    for key in sorted(fields):
        v = fields[key]
        if type(v) is str and _PLAIN.match(v):
            parts.append(f'"{key}":"{v}"')
        elif type(v) is list and all(type(x) is str and _PLAIN.match(x) for x in v):
            parts.append(f'"{key}":[' + ",".join(f'"{x}"' for x in v) + "]")
        else:
            parts.append(f'"{key}":' + json.dumps(v, sort_keys=True, separators=(",", ":")))
    return "{" + ",".join(parts) + "}"


# The lines an operator call writes, as ``_line`` writes them (its sorted
# keys), without its per-field work: a trace names tensors ``x0, x1, ...``
# and numbers need no escaping; only an operator's name is checked, once.
# ``tests/test_capture.py`` holds each one equal to ``_line``.
def _release_line(name: str) -> str:
    return f'{{"INSTRUCTION":"RELEASE","NAME":"{name}"}}'


def _constant_line(name: str) -> str:
    return f'{{"INSTRUCTION":"CONSTANT","NAME":"{name}"}}'


def _memory_line(name: str, nbytes: int) -> str:
    return f'{{"INSTRUCTION":"MEMORY","MEMORY":"{nbytes}","NAME":"{name}"}}'


def _alias_line(name: str, alias: str) -> str:
    return f'{{"ALIAS":"{alias}","INSTRUCTION":"ALIAS","NAME":"{name}"}}'


def _names(names: list[str]) -> str:
    return '["' + '","'.join(names) + '"]' if names else "[]"


def _call_line(op: str, args: list[str], results: list[str], cost: int) -> str:
    if not _plain_op(op):
        return _line(INSTRUCTION="CALL", NAME=op, ARGS=args, RESULT=results, TIME=str(cost))
    return (f'{{"ARGS":{_names(args)},"INSTRUCTION":"CALL","NAME":"{op}",'
            f'"RESULT":{_names(results)},"TIME":"{cost}"}}')


def _mutate_line(op: str, args: list[str], cost: int) -> str:
    if not _plain_op(op):
        return _line(INSTRUCTION="MUTATE", NAME=op, ARGS=args, MUTATE=[0], TIME=str(cost))
    return f'{{"ARGS":{_names(args)},"INSTRUCTION":"MUTATE","MUTATE":[0],"NAME":"{op}","TIME":"{cost}"}}'


@functools.lru_cache(maxsize=None)
def _plain_op(op: str) -> bool:
    return _PLAIN.match(op) is not None


def _storage_key(t: torch.Tensor) -> int:
    return t.untyped_storage()._cdata


@dataclass
class _Tensor:
    name: str
    ref: object  # torch._C._WeakTensorRef
    storage: int


@dataclass
class LiveBytes:
    """Bytes of the storages the trace names that PyTorch holds, tracked
    independently of the trace (from PyTorch's own storage lifetimes)."""

    live: dict[int, tuple[object, int]] = field(default_factory=dict)
    now: int = 0
    peak: int = 0

    def add(self, t: torch.Tensor) -> None:
        s = t.untyped_storage()
        if s._cdata not in self.live:
            self.live[s._cdata] = (StorageWeakRef(s), s.nbytes())
            self.now += s.nbytes()
            self.peak = max(self.peak, self.now)

    def sweep(self) -> None:
        for key in [k for k, (ref, _) in self.live.items() if ref.expired()]:
            self.now -= self.live.pop(key)[1]


class Recorder(TorchDispatchMode):
    """A dispatch mode that writes every operator it sees as trace lines."""

    def __init__(self, cost: Callable[..., int], measure: bool = False) -> None:
        # ``cost(func, args, kwargs, out, inputs, outputs, view=None)``: an
        # operator call's TIME (``costs.roofline``), given its tensors too
        # and whether it is a view (None: not known).
        super().__init__()
        self.cost = cost
        self.measure = measure
        self.lines: list[str] = [_line(INSTRUCTION="ANNOTATE", ANNOTATION="START")]
        self.tensors: dict[int, _Tensor] = {}  # TensorImpl address -> its entry
        self.storages: dict[int, str] = {}  # storage address -> the name that owns it in the trace
        self.count = 0
        self.operators = 0  # CALL and MUTATE lines written
        self.live = LiveBytes()

    # ----- names and lifetimes -------------------------------------------------
    def _known(self, t: torch.Tensor) -> _Tensor | None:
        entry = self.tensors.get(t._cdata)
        if entry is not None and entry.ref.expired():  # an address reused by a new tensor
            self._release(t._cdata)
            return None
        return entry

    def _new_name(self, t: torch.Tensor, storage: torch.UntypedStorage | None = None) -> str:
        name = f"x{self.count}"
        self.count += 1
        if storage is None:
            storage = t.untyped_storage()
        self.tensors[t._cdata] = _Tensor(name, torch._C._WeakTensorRef(t), storage._cdata)
        self._named(t, name, storage)
        return name

    def _named(self, t: torch.Tensor, name: str, storage: torch.UntypedStorage) -> None:
        """A hook: ``t`` (of ``storage``) was named ``name``."""

    def _release(self, key: int) -> None:
        entry = self.tensors.pop(key)
        self.lines.append(_release_line(entry.name))
        if self.storages.get(entry.storage) == entry.name:
            del self.storages[entry.storage]

    def sweep(self) -> None:
        """RELEASE every tensor PyTorch has freed since the last sweep."""
        dead = [k for k, e in self.tensors.items() if e.ref.expired()]
        for key in sorted(dead, key=lambda k: int(self.tensors[k].name[1:])):
            self._release(key)
        self.live.sweep()

    def _input(self, t: torch.Tensor) -> str:
        """The name of an operator's input, made a constant (or an alias of a
        known storage) if no recorded operator made it."""
        entry = self._known(t)
        if entry is not None:
            return entry.name
        owner = self.storages.get(_storage_key(t))
        name = self._new_name(t)
        if owner is None:
            self.lines.append(_constant_line(name))
            self.lines.append(_memory_line(name, t.untyped_storage().nbytes()))
            self.storages[_storage_key(t)] = name
            self.live.add(t)
        else:
            self.lines.append(_call_line("alias", [owner], [name], 0))
            self.operators += 1
            self.lines.append(_memory_line(name, t.untyped_storage().nbytes()))
            self.lines.append(_alias_line(name, "0"))
        return name

    def annotate(self, what: str) -> None:
        self.lines.append(_line(INSTRUCTION="ANNOTATE", ANNOTATION=what))

    # ----- operators ------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.sweep()
        started = time.perf_counter_ns()
        out = func(*args, **kwargs)
        self.record(func, args, kwargs, out, time.perf_counter_ns() - started)
        return out

    def record(self, func, args, kwargs, out, elapsed: int, inputs=None, written=None) -> None:
        """Write the lines of one operator call that returned ``out`` after
        ``elapsed`` nanoseconds (nothing for a call that makes no tensor and
        writes none). ``inputs`` (its tensor arguments) and ``written``
        (:func:`_written_arguments`) where the caller has them already."""
        if inputs is None:
            inputs = flat.arguments(args, kwargs)
        outputs = flat.tensors(out)
        # (In-place kernels over tensor lists return nothing: they still write.)
        if written is None:
            written = _written_arguments(func, args, kwargs)
        if not outputs and not written:
            return
        if written:
            self._mutate(op_name(func), written, self._cost(func, args, kwargs, out, inputs, outputs, elapsed))
            return
        in_keys = {t._cdata for t in inputs}
        fresh = [o for o in outputs if o._cdata not in in_keys]  # an input returned as is is no new tensor
        if not fresh:
            return
        # Each storage is asked for once: the cost model's view test and the
        # trace's aliases both read them.
        by_storage = {}
        for t in inputs:
            by_storage.setdefault(t.untyped_storage()._cdata, t)
        stored = [o.untyped_storage() for o in fresh]
        aliased = [by_storage[d._cdata] for d in stored if d._cdata in by_storage]
        view = len(aliased) == len(stored) and not written_names(func)
        cost = self._cost(func, args, kwargs, out, inputs, outputs, elapsed, view)
        self._call(op_name(func), inputs, fresh, stored, by_storage, aliased, cost)

    def _cost(self, func, args, kwargs, out, inputs, outputs, elapsed: int, view: bool | None = None) -> int:
        """A call's TIME: measured, or the cost model's (told whether the
        call is a view where the recorder knows)."""
        if self.measure:
            return max(int(elapsed), 1)
        return self.cost(func, args, kwargs, out, inputs, outputs, view=view)

    def _call(self, op: str, inputs: list[torch.Tensor], fresh: list[torch.Tensor],
              stored: list[torch.UntypedStorage], by_storage: dict[int, torch.Tensor],
              aliased: list[torch.Tensor], cost: int) -> None:
        """The lines of a call that made the tensors ``fresh`` (of storages
        ``stored``); ``by_storage``, its first input of each storage;
        ``aliased``, the input each fresh tensor that shares one's storage shares."""
        if aliased:
            # A view: its aliased input is its one argument (the format's domain).
            base = aliased[0]
            if any(a._cdata != base._cdata for a in aliased):
                raise CaptureError(f"{op}: outputs alias different inputs; outside the trace format")
            args = [self._input(base)]
        else:
            args = [self._input(t) for t in inputs]
        names = []
        for o, d in zip(fresh, stored):
            if self._known(o) is not None:  # a tensor already named (returned again)
                raise CaptureError(f"{op}: returns a tensor the trace already holds; outside the trace format")
            names.append(self._new_name(o, d))
        self.lines.append(_call_line(op, args, names, cost))
        self.operators += 1
        for o, d, name in zip(fresh, stored, names):
            key = d._cdata
            alias = "0" if aliased and key in by_storage else "-1"
            if alias == "-1":
                if key in self.storages:
                    raise CaptureError(f"{op}: two outputs share a new storage; outside the trace format")
                self.storages[key] = name
                self.live.add(o)
            self.lines.append(_memory_line(name, d.nbytes()))
            self.lines.append(_alias_line(name, alias))

    def _mutate(self, op: str, written: list[tuple[torch.Tensor, list[torch.Tensor]]], cost: int) -> None:
        share = cost // len(written)
        for i, (target, others) in enumerate(written):
            # The last part takes the remainder: the parts sum to the cost.
            part = share + (cost - share * len(written) if i == len(written) - 1 else 0)
            args = [self._input(target)] + [self._input(t) for t in others if t._cdata != target._cdata]
            self.lines.append(_mutate_line(op, args, part))
            self.operators += 1

    def finish(self) -> str:
        self.sweep()
        return self.text

    @property
    def text(self) -> str:
        """The trace written so far."""
        return "\n".join(self.lines) + "\n"


@functools.lru_cache(maxsize=None)
def op_name(func) -> str:
    """An operator's name in the trace: its overload packet's (``addmm``)."""
    return func.__name__.split(".")[0]


@functools.lru_cache(maxsize=None)
def written_names(func) -> list[str]:
    """The arguments an operator writes in place, by its schema."""
    return [a.name for a in func._schema.arguments if a.alias_info is not None and a.alias_info.is_write]


def _written_arguments(func, args, kwargs) -> list[tuple[torch.Tensor, list[torch.Tensor]]]:
    """Each tensor the operator writes in place, with the other tensor
    arguments that go with it (for list arguments, those at its position)."""
    if not written_names(func):
        return []
    schema = func._schema
    values = {}
    for i, a in enumerate(schema.arguments):
        if a.kwarg_only or i >= len(args):
            if a.name in kwargs:
                values[a.name] = kwargs[a.name]
        else:
            values[a.name] = args[i]
    writes = written_names(func)
    if not writes:
        return []
    out = []
    for w in writes:
        v = values.get(w)
        targets = [v] if isinstance(v, torch.Tensor) else [t for t in (v or []) if isinstance(t, torch.Tensor)]
        for k, target in enumerate(targets):
            others = []
            for name, val in values.items():
                if name == w:
                    continue
                if isinstance(val, torch.Tensor):
                    others.append(val)
                elif isinstance(val, (list, tuple)) and len(val) == len(targets):
                    if isinstance(val[k], torch.Tensor):
                        others.append(val[k])
            out.append((target, others))
    return out
