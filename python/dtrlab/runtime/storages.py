"""The runtime's storages: where each of the engine's storages lives, really
freeing the evicted ones and refilling them, and the byte ledger.

The engine's storage ids are the plan's; each resident one has a *home*, a
PyTorch ``UntypedStorage`` holding its bytes:

- a **live** home is the storage the step's own tensors point at (their
  views, autograd's saved tensors, the parameters). Evicting it frees its
  bytes in place (``resize_(0)``, as FSDP frees parameters), so every
  reference stays valid; rematerializing it resizes it back and copies the
  recomputed bytes in.
- a **private** home is a buffer of the runtime's own. The trace format
  models an in-place write as a new storage (copy on write); PyTorch writes
  the old bytes over. Where the engine keeps the old version resident after
  the write, the runtime keeps it so: a private copy made before the write
  (the memory the simulator counts), read only by recomputations. A storage
  the engine rematerializes after every tensor of it was released (no live
  home any more) also gets a private home: the recomputed buffer itself.

In-place writes through different views of one storage (an LSTM cell's
``sigmoid_`` on each chunk of its gates) make versions that branch: each
chunk's name stands for its own version, while PyTorch's storage holds them
all. The live home belongs to the latest version; an older one that stays
resident is copied aside, and an operator reading it reads its home (the
mode substitutes the argument). That is exact while no write overlaps the
bytes a name reads unless it is in that name's own line of versions
(``check_read``); a step that does otherwise is refused (``OutsideRuntime``).

The ledger is the bytes of every home (nothing else is counted): after every
operator it must equal the engine's resident bytes. An old version that the
write overwrote and that the engine is about to evict (its last name is
released by the same line) has no home and counts nothing meanwhile.

A tensor the runtime rebuilds for a recomputation is a view over its home
with the tensor's recorded metadata.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch


class Meta(NamedTuple):
    """A tensor's layout over its storage (a named tuple: one is made per
    tensor of the step, and a frozen dataclass costs several times more)."""

    dtype: torch.dtype
    device: torch.device
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int

    @staticmethod
    def of(t: torch.Tensor) -> "Meta":
        # (``t.shape`` is a tuple already: a ``torch.Size``, equal and hashed as one.)
        return Meta(t.dtype, t.device, t.shape, t.stride(), t.storage_offset())

    def byte_range(self) -> tuple[int, int]:
        """The bytes of its storage the tensor spans: ``[lo, hi)``."""
        if any(n == 0 for n in self.shape):
            return (0, 0)
        item = self.dtype.itemsize
        last = self.offset + sum((n - 1) * abs(st) for n, st in zip(self.shape, self.stride))
        return (self.offset * item, (last + 1) * item)

    def bytes_mask(self, nbytes: int) -> torch.Tensor:
        """Which of ``nbytes`` storage bytes the tensor's elements cover."""
        item = self.dtype.itemsize
        lo, hi = self.byte_range()
        mask = torch.zeros(max(nbytes, hi), dtype=torch.bool)
        if hi > lo:
            elems = torch.arange(hi // item).as_strided(self.shape, self.stride, self.offset).reshape(-1)
            starts = elems * item
            for b in range(item):
                mask[starts + b] = True
        return mask


@functools.lru_cache(maxsize=4096)
def overlap(a: Meta, b: Meta) -> bool:
    """Whether two tensors over one storage share a byte (spans first, then
    element by element: chunks of a row interleave without sharing)."""
    (a0, a1), (b0, b1) = a.byte_range(), b.byte_range()
    if not (a0 < b1 and b0 < a1):
        return False
    n = max(a1, b1)
    return bool((a.bytes_mask(n) & b.bytes_mask(n)).any())


def storage_key(s: torch.UntypedStorage) -> int:
    return s._cdata


class Storages:
    """Homes by engine storage id, and the ledger."""

    def __init__(self, sizes: list[int]) -> None:
        n = len(sizes)
        self.size = sizes  # by tensor id; a storage id's entry is its bytes
        self.home: list[torch.UntypedStorage | None] = [None] * n
        self.live = [False] * n
        #: Resident by the runtime's own account (must be the engine's).
        self.resident = [False] * n
        #: Per live storage key, the engine storage whose bytes it holds now.
        self.current: dict[int, int] = {}
        self.meta: dict[int, Meta] = {}  # by tensor id
        self.bytes = 0
        self.peak = 0
        #: The ledger with the recomputed buffers alive beside it while they
        #: are copied into place (a multi-output recomputation's transient),
        #: at its most.
        self.transient_peak = 0
        #: What the runtime did, in order: ("evict", storage) / ("remat", tensor).
        self.log: list[tuple[str, int]] = []
        #: Per engine storage made by an in-place write: the version it wrote over.
        self.parent: dict[int, int] = {}
        #: Per live storage key: the in-place writes made on it, in order,
        #: as (the written tensor's layout, version made).
        self.writes: dict[int, list[tuple[Meta, int]]] = {}

    # ----- the ledger ----------------------------------------------------------
    def _count(self, s: int, delta: int) -> None:
        self.bytes += delta
        if self.bytes > self.peak:
            self.peak = self.bytes

    def recount(self) -> int:
        """The ledger from scratch: bytes of every home (a check of ``bytes``)."""
        return sum(h.nbytes() for h in self.home if h is not None)

    # ----- homes ------------------------------------------------------------------
    def adopt(self, s: int, storage: torch.UntypedStorage) -> None:
        """A storage of the step (an operator's new output, a constant) is
        the live home of engine storage ``s``."""
        if self.home[s] is not None:
            raise RuntimeError(f"storage {s} has a home already")
        key = storage_key(storage)
        if key in self.current:
            raise RuntimeError(f"storage {s} arrives in the storage of {self.current[key]}")
        self.home[s] = storage
        self.live[s] = True
        self.resident[s] = True
        self.current[key] = s
        # (A new storage may reuse a freed one's address: its writes are not this one's.)
        self.writes.pop(key, None)
        self._count(s, storage.nbytes())

    def is_current(self, s: int, storage: torch.UntypedStorage) -> bool:
        """Whether ``storage`` (a step tensor's) holds engine storage ``s`` now."""
        return self.current.get(storage_key(storage)) == s

    def lineage(self, s: int) -> set[int]:
        out = {s}
        while s in self.parent:
            s = self.parent[s]
            out.add(s)
        return out

    def check_read(self, s: int, m: Meta, storage: torch.UntypedStorage) -> str | None:
        """Why reading a tensor of layout ``m`` as version ``s`` of ``storage``
        would not give PyTorch's bytes (a write outside ``s``'s line of
        versions overlaps them), or None."""
        writes = self.writes.get(storage_key(storage))
        if not writes:
            return None
        line = None
        for w, v in writes:
            line = self.lineage(s) if line is None else line
            if v not in line and overlap(m, w):
                a, b = w.byte_range()
                return f"bytes {a}-{b} of its storage were written in place through another view since"
        return None

    def supersede(self, old: int, new: int, storage: torch.UntypedStorage, keep_old: bool,
                  written: Meta) -> None:
        """An in-place write into ``storage`` (a step tensor's) is about to
        make version ``new`` from ``old``; the live home becomes ``new``'s.
        ``keep_old``: the engine keeps ``old`` resident after it, so (if its
        home is this storage) its bytes are copied aside first, otherwise they
        go with the write. A version that branches (``old`` is not the one the
        storage holds) starts from ``old``'s bytes where the storage was
        freed; the version the storage held is copied aside if resident."""
        key = storage_key(storage)
        holder = self.current.get(key)
        if holder is not None and holder != old:
            if self.resident[holder] and self.home[holder] is storage:
                self._move_aside(holder, storage)
            elif self.home[holder] is storage:
                self.home[holder] = None
            self.live[holder] = False
        if holder == old:
            self.home[old], self.live[old] = None, False
            self._count(old, -storage.nbytes())
            if keep_old:
                copy = torch.UntypedStorage(storage.nbytes(), device=storage.device)
                copy.copy_(storage)
                self.home[old] = copy
                self._count(old, copy.nbytes())
        elif storage.nbytes() != self.size[new]:
            # The storage was freed with the version it held: start from old's.
            src = self.home[old]
            storage.resize_(src.nbytes())
            storage.copy_(src)
        self.current[key] = new
        self.home[new] = storage
        self.live[new] = True
        self.resident[new] = True
        self._count(new, storage.nbytes())
        self.parent[new] = old
        self.writes.setdefault(key, []).append((written, new))

    def _move_aside(self, s: int, storage: torch.UntypedStorage) -> None:
        copy = torch.UntypedStorage(storage.nbytes(), device=storage.device)
        copy.copy_(storage)
        self.home[s], self.live[s] = copy, False

    # ----- eviction and rematerialization -----------------------------------------
    def evict(self, s: int, released: bool) -> None:
        """Free engine storage ``s``. A storage evicted because its last name
        was released is let go (PyTorch frees it unless something outside the
        trace still holds it); a victim is freed in place."""
        if not self.resident[s]:
            raise RuntimeError(f"the engine evicts storage {s}, which is not resident")
        self.resident[s] = False
        self.log.append(("evict", s))
        h = self.home[s]
        if h is None:  # an old version the write overwrote
            return
        self._count(s, -h.nbytes())
        if self.live[s] and not released:
            if not h.resizable():
                raise RuntimeError(f"storage {s} cannot be freed in place (not resizable)")
            h.resize_(0)
            return
        if self.live[s]:
            del self.current[storage_key(h)]
            self.live[s] = False
        self.home[s] = None

    def fill(self, s: int, data: torch.UntypedStorage) -> None:
        """Make engine storage ``s`` resident again with the bytes of
        ``data`` (a recomputed buffer): copied into its live home, or kept as
        its private home."""
        if self.resident[s]:
            raise RuntimeError(f"storage {s} is rematerialized while resident")
        h = self.home[s]
        if h is not None and self.live[s]:
            h.resize_(data.nbytes())
            h.copy_(data)
            self.transient_peak = max(self.transient_peak, self.bytes + h.nbytes() + data.nbytes())
        else:
            self.home[s], self.live[s] = data, False
        self.resident[s] = True
        self._count(s, data.nbytes())

    def filled_in_place(self, s: int, storage: torch.UntypedStorage, live: bool) -> None:
        """Engine storage ``s`` was recomputed straight into ``storage``
        (an in-place operator's rerun)."""
        self.home[s], self.live[s] = storage, live
        if live:
            self.current[storage_key(storage)] = s
        self.resident[s] = True
        self._count(s, storage.nbytes())

    def view(self, t: int, s: int) -> torch.Tensor:
        """Tensor ``t`` (of storage ``s``) over its home, for a recomputation."""
        h = self.home[s]
        if h is None or not self.resident[s]:
            raise RuntimeError(f"a recomputation reads storage {s}, which is not resident")
        m = self.meta[t]
        return torch.empty(0, dtype=m.dtype, device=m.device).set_(h, m.offset, m.shape, m.stride)

    def weak_refs(self) -> list[tuple[int, object]]:
        """Weak references to every home, by storage key."""
        from torch.multiprocessing.reductions import StorageWeakRef

        return [(storage_key(h), StorageWeakRef(h)) for h in self.home if h is not None]

    def release_all(self) -> None:
        """The step is over: let every home go."""
        self.home = [None] * len(self.home)
        self.current.clear()
        self.meta.clear()
        self.writes.clear()
