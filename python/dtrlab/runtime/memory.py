"""Memory as the process sees it, beside the runtime's own ledger: the C
allocator's bytes in use and the process's peak resident set.

PyTorch's CPU allocator takes its buffers from the C library's ``malloc``
(``posix_memalign``), so glibc's ``mallinfo2()`` counts them, together with
everything else the process allocates (``uordblks`` for the heap,
``hblkhd`` for buffers mapped on their own). It keeps no peak: the runtime
polls it after every operator. The process's peak is ``VmHWM`` in
``/proc/self/status``, which writing ``5`` to ``/proc/self/clear_refs``
resets. Both are Linux's; elsewhere they read as unavailable (None).

On a GPU the same figures would come from the CUDA caching allocator's
statistics (``torch.cuda.memory_allocated`` and its peak); nothing else in
the runtime depends on the device.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from pathlib import Path

_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
           "keepcost")


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _FIELDS]


def _libc():
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        lib.mallinfo2.restype = _Mallinfo2
        lib.mallinfo2.argtypes = []
        return lib
    except (OSError, AttributeError):  # not glibc (or older than 2.33)
        return None


_LIBC = _libc()


def allocator_bytes() -> int | None:
    """Bytes the C allocator has handed out and not taken back, or None."""
    if _LIBC is None:
        return None
    m = _LIBC.mallinfo2()
    return int(m.uordblks + m.hblkhd)


def _status(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def process_peak() -> int | None:
    """The process's peak resident set (``VmHWM``) in bytes, or None."""
    return _status("VmHWM:")


def process_resident() -> int | None:
    """The process's resident set now (``VmRSS``) in bytes, or None."""
    return _status("VmRSS:")


def reset_process_peak() -> bool:
    """Start ``VmHWM`` again from the current resident set; False where the
    system does not allow it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class AllocatorPeak:
    """The allocator's bytes in use, polled: the peak since ``start`` above
    the bytes in use at ``start``."""

    def __init__(self) -> None:
        self.base = allocator_bytes()
        self.peak = 0

    @property
    def available(self) -> bool:
        return self.base is not None

    def now(self) -> int:
        """Bytes in use above the start (0 where unavailable)."""
        b = allocator_bytes()
        if b is None or self.base is None:
            return 0
        return b - self.base

    def poll(self) -> int:
        n = self.now()
        if n > self.peak:
            self.peak = n
        return n
