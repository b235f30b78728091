"""The cost of an operator in a captured trace: a roofline over a stated
accelerator, so that the same model, batch and library version give the same
trace bytes on any machine.

``TIME`` (integer nanoseconds) = ``LAUNCH_NS + max(flops / PEAK_FLOPS,
bytes / BANDWIDTH)``, where ``flops`` is PyTorch's own count
(``torch.utils.flop_counter``: matrix products, convolutions, attention; 0
for the rest) and ``bytes`` the bytes of every tensor the operator reads and
writes (their elements, not their storages). A view moves no bytes and costs
the launch alone. The constants describe a V100-class GPU of 2020 (the public
traces' era): 14 TFLOP/s fp32, 900 GB/s, 5 µs per operator launch. What the
model cannot see — kernel quality, fusion, cache reuse — is a difference
between captured costs and measured ones; `measure=True` records measured
CPU wall times instead (not reproducible across machines).
"""

from __future__ import annotations

import math

import torch
from torch.utils.flop_counter import flop_registry

from dtrlab.capture import flat
from dtrlab.capture.recorder import written_names

PEAK_FLOPS = 14e12  # per second
BANDWIDTH = 900e9  # bytes per second
LAUNCH_NS = 5_000


def operator_flops(func, args, kwargs, out) -> int:
    """PyTorch's FLOP count of one operator call (0 where it has no formula)."""
    formula = flop_registry.get(func._overloadpacket)
    if formula is None:
        return 0
    # The formulas read shapes (and the other arguments): the count of a
    # call like one seen before is the same (and torch's pytree, which the
    # formulas go through, is slow).
    leaves: list = [func]
    try:
        _call_key(args, leaves)
        _call_key(kwargs, leaves)
        _call_key(out, leaves)
        key = tuple(leaves)
        n = _FLOPS.get(key)
    except TypeError:  # an argument that cannot be a key
        return int(formula(*args, **kwargs, out_val=out))
    if n is None:
        n = _FLOPS[key] = int(formula(*args, **kwargs, out_val=out))
    return n


_FLOPS: dict = {}
_Tensor = torch.Tensor
_SEQUENCES = {tuple, list}
#: Leaves that are keys as they are.
_ATOMS = {int, float, bool, type(None), str}


def _call_key(obj, leaves: list) -> None:
    """Append what a FLOP formula can read of ``obj`` to ``leaves``, flat:
    a tensor's shape and dtype, containers' shapes (their type and length),
    every other leaf as it is; a list or tuple of numbers (sizes, strides, a
    mask), its type and itself as one tuple."""
    if isinstance(obj, _Tensor):
        leaves.append(obj.shape)
        leaves.append(obj.dtype)
    elif type(obj) in _SEQUENCES and _ATOMS.issuperset(map(type, obj)):
        # (One leaf instead of one per item: a convolution's backward has
        # seven such lists, and its key took longer than its formula.)
        leaves.append(type(obj))
        leaves.append(tuple(obj))
    elif isinstance(obj, (tuple, list, dict)):
        leaves.append(type(obj))
        leaves.append(len(obj))
        if isinstance(obj, dict):
            for k, v in obj.items():
                leaves.append(k)
                _call_key(v, leaves)
        else:
            for x in obj:
                _call_key(x, leaves)
    else:
        leaves.append(obj)


def roofline(func, args, kwargs, out, ins: list | None = None, outs: list | None = None,
             view: bool | None = None) -> int:
    """Nanoseconds of one operator call under the cost model above; ``ins``
    and ``outs``, the call's tensors (``flat.arguments``, ``flat.tensors``),
    and ``view``, whether every output shares an input's storage (for an
    operator that writes none), where the caller has them already."""
    if ins is None:
        ins = flat.arguments(args, kwargs)
    if outs is None:
        outs = flat.tensors(out)
    if view is None:
        view = False
        if outs and not written_names(func):
            in_storages = {a.untyped_storage()._cdata for a in ins}
            view = all(o.untyped_storage()._cdata in in_storages for o in outs)
    if view:
        return LAUNCH_NS
    moved = 0
    for t in ins:
        moved += t.nbytes
    for t in outs:
        moved += t.nbytes
    seconds = max(operator_flops(func, args, kwargs, out) / PEAK_FLOPS, moved / BANDWIDTH)
    return LAUNCH_NS + math.ceil(seconds * 1e9)

