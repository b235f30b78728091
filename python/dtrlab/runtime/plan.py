"""The plan: the trace of the same step, captured before it runs under the
budget, which the runtime follows line by line.

The runtime must tell the engine about an operator before running it (the
engine makes room and rematerializes evicted inputs first), but a trace
line says how many bytes the outputs take, which only running it shows. The
plan gives those lines ahead. The runtime records the step again with the
same recorder as it runs, and checks every line against the plan's: a step
that departs from its plan stops with :class:`PlanMismatch` at the first
line that differs, so the engine never acts on a line that is not the
step's. (With measured costs the two runs time their operators apart: only
``TIME`` may differ.)

The engine reads the plan as any trace (its schedule of commands, each with
the line it came from); this module answers "which commands does the next
line make" and "which tensor does a name stand for now".
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from pathlib import Path

from dtrlab import _engine, engine
from dtrlab.exceptions import PlanMismatch

#: Schedule command kinds (``Trace.schedule_table``).
COMPUTE, GET_REF, GET_PIN, RELEASE = 0, 1, 2, 3

_TIME = re.compile(r'"TIME":"[0-9]+"')


def without_time(line: str) -> str:
    return _TIME.sub('"TIME":""', line)


@dataclass(frozen=True)
class OpLines:
    """Where one operator call stands in the plan: its inputs' naming lines
    (``first`` up to ``op``), then its own lines (``op`` up to ``end``);
    0-based line indices."""

    first: int
    op: int
    end: int
    #: How many inputs the naming lines name.
    named: int
    #: The names its line gives as arguments.
    args: frozenset[str]
    #: The schedule positions before and after the commands of lines up to ``op``.
    before: int
    through: int


class Plan:
    """A captured trace, parsed by the engine and kept as lines."""

    def __init__(self, text: str, source: str = "plan.log", timed: bool = False) -> None:
        self.text = text
        self.lines = text.splitlines()
        #: Operator costs were measured, so TIME differs between two runs.
        self.timed = timed
        native = _engine.Trace.parse(text, source, False)
        self.trace = engine.Trace(native, Path(source), start=False)
        kinds, args, lines, body = native.schedule_table()
        self.kinds, self.args, self.cmd_lines, self.body = kinds, args, lines, body
        self.first_output, self.n_outputs, self.is_constant = native.op_table()
        self.storage, self.size = native.tensor_table()
        self.tensor_op = [0] * len(self.storage)
        for op, (first, n) in enumerate(zip(self.first_output, self.n_outputs)):
            for t in range(first, first + n):
                self.tensor_op[t] = op
        names = native.tensor_names()
        #: Per operator, (name in the step, tensor) of each output: an
        #: in-place write's output ``x7$`` is what the name ``x7`` stands for after it.
        self.op_names = [[(names[t].rstrip("$"), t) for t in range(first, first + n)]
                         for first, n in zip(self.first_output, self.n_outputs)]
        #: Per schedule command, the names it gives a new meaning: a
        #: ``COMPUTE``'s outputs' (``op_names``), none for the others.
        self.renames = [self.op_names[a] if k == COMPUTE else () for k, a in zip(kinds, args)]
        self._records: dict[int, dict] = {}
        self._views: dict[int, bool] = {}
        self._op_lines: dict[tuple[int, str, str], OpLines | None] = {}

    def record(self, i: int) -> dict:
        """Line ``i`` (0-based), decoded."""
        r = self._records.get(i)
        if r is None:
            r = self._records[i] = json.loads(self.lines[i])
        return r

    def commands_through(self, line_index: int) -> int:
        """The schedule position after every command of lines up to
        ``line_index`` (0-based, included)."""
        return bisect.bisect_right(self.cmd_lines, line_index + 1, 0, self.body)

    def commands_before(self, line_index: int) -> int:
        return bisect.bisect_left(self.cmd_lines, line_index + 1, 0, self.body)

    def naming_lines(self, i: int) -> tuple[int, int]:
        """From line ``i``: how many lines name an operator's inputs (a
        constant's two, or the three of an ``alias`` of a known storage, which
        costs 0), and how many inputs they name."""
        j, named = i, 0
        while j < len(self.lines):
            r = self.record(j)
            if r["INSTRUCTION"] == "CONSTANT":
                j, named = j + 2, named + 1
            elif r["INSTRUCTION"] == "CALL" and r["NAME"] == "alias" and r["TIME"] == "0":
                j, named = j + 3, named + 1
            else:
                break
        return j - i, named

    def op_lines(self, i: int, instruction: str, name: str) -> OpLines | None:
        """The lines of an operator call from line ``i``, if the plan's next
        operator is ``instruction`` (CALL or MUTATE) named ``name``; None if
        the plan goes on with something else (a call that records nothing, or
        a step that departs from its plan)."""
        key = (i, instruction, name)
        if key not in self._op_lines:  # (asked at every operator call, and again by every run)
            self._op_lines[key] = self._find_op_lines(i, instruction, name)
        return self._op_lines[key]

    def _find_op_lines(self, i: int, instruction: str, name: str) -> OpLines | None:
        span, named = self.naming_lines(i)
        j = i + span
        if j >= len(self.lines):
            return None
        r = self.record(j)
        if r["INSTRUCTION"] != instruction or r["NAME"] != name:
            return None
        end = j + 1 + (2 * len(r["RESULT"]) if instruction == "CALL" else 0)
        return OpLines(i, j, end, named, frozenset(r["ARGS"]), self.commands_before(j), self.commands_through(j))

    def is_view(self, ol: OpLines) -> bool:
        """Whether the call's outputs alias its input (an ``ALIAS 0`` line)."""
        v = self._views.get(ol.op)
        if v is None:
            v = self._views[ol.op] = any(self.record(k)["INSTRUCTION"] == "ALIAS" and self.record(k)["ALIAS"] != "-1"
                                         for k in range(ol.op + 1, ol.end))
        return v

    def check(self, recorded: list[str], start: int, end: int) -> None:
        """Recorded lines ``start:end`` must be the plan's."""
        for k in range(start, end):
            want = self.lines[k] if k < len(self.lines) else None
            got = recorded[k]
            same = got == want if not self.timed or want is None else without_time(got) == without_time(want)
            if not same:
                raise PlanMismatch(f"line {k + 1}: the step recorded {got}, its plan says {want}")

    @property
    def n_lines(self) -> int:
        return len(self.lines)
