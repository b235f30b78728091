"""Exceptions raised by dtrlab.

Out-of-memory and thrashing are *outcomes* of a run (``SimResult.status``), not
exceptions.
"""

from dtrlab._engine import EngineError, TraceError


class ChecksumError(RuntimeError):
    """Downloaded or extracted data does not have the pinned sha256."""


class DownloadError(RuntimeError):
    """The trace archive could not be obtained from the URL or the mirror."""


class ReferenceUnavailable(RuntimeError):
    """The reference simulator (simrd) checkout was not found."""


__all__ = ["ChecksumError", "DownloadError", "EngineError", "ReferenceUnavailable", "TraceError"]
