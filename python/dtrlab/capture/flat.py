"""The tensors of an operator's arguments or results, in the order of
``torch.utils._pytree.tree_flatten``, without its generality: an operator's
arguments are tensors, numbers and flat containers of them (lists, tuples,
``torch.return_types``, keyword dictionaries), and torch's pytree, written
for any registered node type, costs tens of microseconds per call there,
several calls per operator. Anything else falls back to pytree itself.
"""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_flatten

_Tensor = torch.Tensor


def tensors(obj) -> list[torch.Tensor]:
    """Every tensor in ``obj`` (nested tuples, lists and dicts), in pytree's order."""
    out: list[torch.Tensor] = []
    _collect(obj, out)
    return out


def _collect(obj, out: list) -> None:
    if isinstance(obj, _Tensor):
        out.append(obj)
    elif type(obj) is tuple or type(obj) is list:
        for x in obj:
            _collect(x, out)
    elif type(obj) is dict:
        for x in obj.values():
            _collect(x, out)
    elif isinstance(obj, (tuple, list, dict)):  # a named tuple, a return type, a subclass: pytree's own rules
        out.extend(x for x in tree_flatten(obj)[0] if isinstance(x, _Tensor))
    # (numbers, strings, None, dtypes, devices, ...: leaves that are not tensors)


def arguments(args, kwargs) -> list[torch.Tensor]:
    """The tensors of a call's ``(args, kwargs)``."""
    # (The first level inline: a call's arguments are mostly tensors and
    # numbers, and this runs at every operator.)
    out: list[torch.Tensor] = []
    for a in args:
        if isinstance(a, _Tensor):
            out.append(a)
        elif a is not None and not isinstance(a, _SCALARS):
            _collect(a, out)
    if kwargs:
        _collect(kwargs, out)
    return out


#: Leaves that are never tensors nor hold one.
_SCALARS = (int, float, bool, str, torch.dtype, torch.device, torch.layout, torch.memory_format)


def replace(obj, f, leaf: type = _Tensor):
    """``obj`` with every ``leaf`` (a tensor unless said) ``x`` replaced by
    ``f(x)`` (tuples, lists and dicts rebuilt; anything else kept)."""
    if isinstance(obj, leaf):
        return f(obj)
    kind = type(obj)
    if kind is tuple or kind is list:
        # (Leaves and numbers without a call each: this runs at every operator.)
        items = [f(x) if isinstance(x, leaf) else replace(x, f, leaf) if type(x) in _CONTAINERS else x
                 for x in obj]
        return tuple(items) if kind is tuple else items
    if kind is dict:
        return {k: replace(v, f, leaf) for k, v in obj.items()}
    return obj


_CONTAINERS = {tuple, list, dict}
