"""The work behind each workflow rule: one step per rule, named after it.

A rule declares its inputs, outputs and params by name and runs
``workflow/scripts/step.py``, which hands them to the step of the same name
as a :class:`Step` (``step.input.trace``, ``step.params.ratios``): nothing is
passed by position or as a JSON string. The modules follow the rule files
(``data``, ``baselines``, ``experiments``, ``atlas``, ``capture``, ``runtime``, ``paper``; the
manifests of ``provenance.smk`` in ``manifests``).

:func:`run` is the one place that records provenance: before a step writes
its outputs, a record per output (rule, input hashes, params); see
:mod:`dtrlab.provenance`. A step that must write nothing before it has
checked its input (the fetch) records its outputs itself, afterwards.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

from dtrlab import provenance

#: The step modules, in the workflow's order, and the rules whose steps each
#: registers: a job imports its own rule's module only, so that the hundreds
#: of chunk jobs start without what the others import (pandas, matplotlib).
#: The tests check the table against what the modules register.
MODULES: dict[str, tuple[str, ...]] = {
    "data": ("fetch_traces",),
    "baselines": ("baseline", "baselines"),
    "experiments": ("sweep_chunk", "sweep", "c1_regimes", "c2_reeviction", "c3_inversions", "c4_forensics",
                    "c5_ablation", "c6_determinism", "claims", "claims_check"),
    "atlas": ("atlas_chunk", "atlas_trace", "atlas_report", "atlas_page"),
    "capture": ("capture_trace", "compare_refine", "compare"),
    "runtime": ("runtime_study", "runtime_report"),
    "paper": ("paper_tables", "paper_macros", "paper"),
    "manifests": ("manifest", "atlas_manifest"),
}
_MODULE_OF = {rule: module for module, rules in MODULES.items() for rule in rules}

_STEPS: dict[str, Callable[[Step], None]] = {}
#: How each step's provenance is recorded: "before" its outputs are written
#: (by `run`), "self" (the step records after checking), or "none" (the
#: manifests, which are not artifacts of the study).
_RECORD: dict[str, str] = {}


class Named(Mapping[str, Any]):
    """Named files or values, read as attributes (``named.trace``)."""

    def __init__(self, items: Mapping[str, Any] | None = None, **kw: Any) -> None:
        object.__setattr__(self, "_items", {**(items or {}), **kw})

    def __getattr__(self, name: str) -> Any:
        try:
            return self._items[name]
        except KeyError:
            raise AttributeError(f"{name!r} is not declared (declared: {', '.join(self._items) or 'nothing'})") \
                from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a step's inputs, outputs and params are read-only")

    def __getitem__(self, name: str) -> Any:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def files(self) -> list[str]:
        """Every path, in declaration order (lists flattened)."""
        out: list[str] = []
        for v in self._items.values():
            out += [str(x) for x in v] if isinstance(v, (list, tuple)) else [str(v)]
        return out

    def __repr__(self) -> str:
        return f"Named({self._items!r})"


@dataclass(frozen=True)
class Step:
    """One job of a rule: what it reads, writes and is told."""

    rule: str
    input: Named = field(default_factory=Named)
    output: Named = field(default_factory=Named)
    params: Named = field(default_factory=Named)
    threads: int = 1

    def trace(self, name: str = "trace"):
        """Input ``name`` parsed as every step parses a trace (param
        ``start``: from the ANNOTATE START marker or not, as configured)."""
        from dtrlab import engine

        return engine.load_trace(self.input[name], start=self.params.start)


def step(record: str = "before") -> Callable:
    """Register a function as the step of the rule of the same name."""
    if record not in ("before", "self", "none"):
        raise ValueError(f"record must be before, self or none, not {record!r}")

    def register(fn: Callable[[Step], None]) -> Callable[[Step], None]:
        _STEPS[fn.__name__] = fn
        _RECORD[fn.__name__] = record
        return fn

    return register


def steps() -> dict[str, Callable[[Step], None]]:
    """Rule name -> its step, every module loaded."""
    for m in MODULES:
        importlib.import_module(f"dtrlab.steps.{m}")
    return dict(_STEPS)


def step_of(rule: str) -> Callable[[Step], None]:
    """The step of ``rule``, its module loaded (and no other)."""
    if rule not in _MODULE_OF:
        raise ValueError(f"no step for rule {rule!r}; steps: {', '.join(sorted(_MODULE_OF))}")
    importlib.import_module(f"dtrlab.steps.{_MODULE_OF[rule]}")
    return _STEPS[rule]


def run(s: Step) -> None:
    """Run the step of ``s.rule``, recording its outputs' provenance."""
    fn = step_of(s.rule)
    if _RECORD[s.rule] != "before":
        fn(s)
        return
    # Directories (a reference checkout) are tools, not data: not hashed.
    inputs = [p for p in s.input.files() if not os.path.isdir(p)]
    with provenance.recording(s.output.files(), s.rule, inputs=inputs, params=dict(s.params)):
        fn(s)


def job(smk) -> None:
    """Run a Snakemake job's step (``workflow/scripts/step.py``): its log
    receives the step's output; a failure is one line there and exit 1."""
    from dtrlab.exceptions import FAILURES, one_line

    if smk.log:
        # File descriptors, not sys.stdout: what libraries and subprocesses
        # print goes to the log too.
        log = os.open(str(smk.log[0]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(log, 1)
        os.dup2(log, 2)
    s = Step(rule=smk.rule, input=_named(smk.input, "input"), output=_named(smk.output, "output"),
             params=_named(smk.params, "param", files=False), threads=smk.threads)
    try:
        run(s)
    except (*FAILURES, AttributeError, KeyError) as e:
        print(f"dtrlab: error: rule {s.rule}: {one_line(e)}", file=sys.stderr, flush=True)
        sys.exit(1)


def _named(namedlist, what: str, files: bool = True) -> Named:
    """A Snakemake Namedlist as :class:`Named` (every entry must have a name;
    a named list of files spans several entries, a param is one)."""
    items = {k: (list(map(_plain, v)) if isinstance(v, list) else _plain(v)) for k, v in namedlist.items()}
    count = sum(len(v) if files and isinstance(v, list) else 1 for v in items.values())
    if count != len(namedlist):
        raise ValueError(f"every {what} of a step's rule must be named ({len(namedlist) - count} unnamed)")
    return Named(items)


def _plain(v):
    # Snakemake's file objects are str subclasses; values stay as they are.
    return str(v) if isinstance(v, str) else v
