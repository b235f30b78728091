"""Budget grids from the config: exact decimal ratios, stable order.

A ratio written 0.104 in a paper means the double nearest to 0.104, so that
``int(peak * 0.104)`` is the paper's budget; stepping by repeated float
addition would drift. Grids are built in decimal and converted once.
"""

from __future__ import annotations

from decimal import Decimal


def ratio_grid(start: float | str, stop: float | str, step: float | str) -> list[float]:
    """Ratios start, start+step, ..., stop (inclusive), each the double nearest the decimal."""
    a, b, s = Decimal(str(start)), Decimal(str(stop)), Decimal(str(step))
    if s <= 0:
        raise ValueError(f"step must be positive, got {step}")
    if b < a:
        raise ValueError(f"stop {stop} is below start {start}")
    out = []
    x = a
    while x <= b:
        out.append(float(x))
        x += s
    return out


def expand_ratios(spec) -> list[float]:
    """A config ratio spec: a list of ratios, or {start, stop, step[, extra]}."""
    if isinstance(spec, list):
        ratios = [float(Decimal(str(r))) for r in spec]
    else:
        ratios = ratio_grid(spec["start"], spec["stop"], spec["step"])
        ratios += [float(Decimal(str(r))) for r in spec.get("extra", [])]
    return sorted(set(ratios))


def chunks(items: list, size: int) -> list[list]:
    """Consecutive chunks of at most ``size`` items."""
    return [items[i : i + size] for i in range(0, len(items), size)]
