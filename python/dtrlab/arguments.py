"""Checks of the public API's arguments: a wrong type is a ``TypeError``, a
value out of its domain a ``ValueError``, each naming the argument. (The
engine's integers are unsigned 64- or 32-bit: an out-of-range value must not
reach it as an ``OverflowError``, nor be silently truncated.)"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Iterable

U32 = 2**32
U64 = 2**64


class BadArgument(ValueError):
    """An argument's value is outside its domain (the CLI's exit status 2)."""


class BadArgumentType(TypeError):
    """An argument has the wrong type (the CLI's exit status 2)."""


def integer(name: str, value, lo: int = 0, hi: int = U64) -> int:
    """An int in ``[lo, hi)`` (bools and floats are refused, even 1.0)."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise BadArgumentType(f"{name} must be an integer, not {type(value).__name__} ({value!r})")
    value = int(value)
    if not lo <= value < hi:
        raise BadArgument(f"{name} must be in [{lo}, {hi - 1}], got {value}")
    return value


def real(name: str, value, lo: float, lo_open: bool = False, allow_inf: bool = False) -> float:
    """A finite real number above ``lo`` (``+inf`` too if ``allow_inf``)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise BadArgumentType(f"{name} must be a number, not {type(value).__name__} ({value!r})")
    try:
        value = float(value)
    except OverflowError:  # an int too large for a float, e.g. 10**400
        raise BadArgument(f"{name} must be a finite number, got an integer of {int(value).bit_length()} bits") from None
    if math.isnan(value) or (math.isinf(value) and not (allow_inf and value > 0)):
        raise BadArgument(f"{name} must be a finite number, got {value}")
    if value < lo or (lo_open and value == lo):
        raise BadArgument(f"{name} must be {'>' if lo_open else '>='} {lo:g}, got {value:g}")
    return value


def cap(value) -> float | None:
    """An overhead cap: None (no cap), or a number above 1 (``+inf`` = no cap).
    remat_limit = compute x (cap - 1): a cap of 1 or less allows no work at all."""
    return None if value is None else real("cap", value, 1.0, lo_open=True, allow_inf=True)


def boolean(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise BadArgumentType(f"{name} must be True or False, not {type(value).__name__} ({value!r})")
    return value


def choice(name: str, value, options: Iterable[str]) -> str:
    options = tuple(options)
    if not isinstance(value, str) or value not in options:
        raise BadArgument(f"unknown {name} {value!r}; choose one of {', '.join(options)}")
    return value


def storage_ids(name: str, values) -> list[int]:
    """Storage ids: an iterable of ints in [0, 2^32), sorted, without repeats.
    A string is refused (it is iterable, but "123" is not [1, 2, 3])."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise BadArgumentType(f"{name} must be a list of storage ids, not {type(values).__name__} ({values!r})")
    return sorted({integer(f"{name} item", v, 0, U32) for v in values})
