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


def one_line(e: BaseException) -> str:
    """An error as one line of at most 500 characters (what the CLI and the
    workflow's steps print instead of a traceback)."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 500 else text[:497] + "..."


#: What a command or step can fail with, reported as one line.
FAILURES = (TraceError, ChecksumError, DownloadError, ReferenceUnavailable, EngineError, OSError, ValueError,
            TypeError)

__all__ = ["CaptureError", "ChecksumError", "DownloadError", "EngineError", "ReferenceUnavailable", "TraceError"]
