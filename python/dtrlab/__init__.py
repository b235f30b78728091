"""dtrlab: a bit-exact, fast DTR simulator and the reproducible study around it.

Public API::

    load_trace(path_or_key, start=False) -> Trace
    baseline(trace) -> Baseline            # .to_dict(): peak, compute, const, bottleneck
    simulate(trace, budget=None, ratio=None, heuristic="DTR", cap=60.0,
             seed=None, retain=(), events=False, engine="native") -> SimResult
"""

from dtrlab.engine import (
    DEFAULT_CAP,
    ENGINE_VERSION,
    HEURISTICS,
    Baseline,
    SimResult,
    Trace,
    baseline,
    load_trace,
    simulate,
)
from dtrlab.exceptions import ChecksumError, DownloadError, EngineError, ReferenceUnavailable, TraceError
from dtrlab.traces import TRACE_KEYS

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_CAP",
    "ENGINE_VERSION",
    "HEURISTICS",
    "TRACE_KEYS",
    "Baseline",
    "ChecksumError",
    "DownloadError",
    "EngineError",
    "ReferenceUnavailable",
    "SimResult",
    "Trace",
    "TraceError",
    "baseline",
    "load_trace",
    "simulate",
]
