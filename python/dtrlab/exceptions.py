"""Exceptions raised by dtrlab.

Out-of-memory and thrashing are *outcomes* of a run (``SimResult.status``), not
exceptions.
"""

from dtrlab._engine import EngineError, TraceError


class ChecksumError(RuntimeError):
    """Downloaded or extracted data does not have the pinned sha256."""


class DownloadError(RuntimeError):
    """The trace archive could not be obtained from the URL or the mirror."""


class CaptureError(ValueError):
    """What PyTorch ran cannot be written in the trace format (dtrlab.capture)."""


class ReferenceUnavailable(RuntimeError):
    """The reference simulator (simrd) checkout was not found."""


class StepFailed(RuntimeError):
    """A training step under the runtime (dtrlab.runtime) could not finish
    within its budget. ``operator`` names the operator, ``budget`` is in
    bytes, ``result`` is the engine's record of the run (``status``, ``fail``).
    The model, its parameters and its optimizer are as before the step."""

    def __init__(self, message: str, operator: str, budget: int | None, result) -> None:
        super().__init__(message)
        self.operator = operator
        self.budget = budget
        self.result = result

    def __reduce__(self):
        return (type(self), (str(self), self.operator, self.budget, self.result))


class OutOfMemory(StepFailed):
    """Out of memory: nothing left to evict while an operator needed room."""


class Thrashed(StepFailed):
    """Rematerialization passed the overhead cap."""


class PlanMismatch(RuntimeError):
    """The step under the runtime departed from the trace it was planned
    with (names the first line that differs)."""


class OutsideRuntime(ValueError):
    """The step does something the runtime cannot execute exactly (for
    example, reads a tensor through a name an in-place write has superseded)."""


def one_line(e: BaseException) -> str:
    """An error as one line of at most 500 characters (what the CLI and the
    workflow's steps print instead of a traceback)."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 500 else text[:497] + "..."


#: What a command or step can fail with, reported as one line.
FAILURES = (TraceError, ChecksumError, DownloadError, ReferenceUnavailable, EngineError, PlanMismatch, OSError,
            ValueError, TypeError)

__all__ = ["CaptureError", "ChecksumError", "DownloadError", "EngineError", "OutOfMemory", "OutsideRuntime",
           "PlanMismatch", "ReferenceUnavailable", "StepFailed", "Thrashed", "TraceError"]
