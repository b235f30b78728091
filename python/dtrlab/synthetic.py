"""Synthetic traces of given shapes, at any depth (:func:`write`): what the
engine's scaling benchmark replays and its tests check against the eager run.

Every output is 100 bytes and costs 1 unless stated; constants are 8 bytes.

- ``chain``: x0 -> x1 -> ... -> xn, each released once its successor
  exists (evicted eagerly), xn too; a 150-byte constant w, then y = g(xn)
  needs the whole chain again, n levels deep.
- ``backward``: a deep network's training step: a forward pass x1..xn
  (costs 1..7) kept for a backward pass g_i = b(g_{i+1}, x_i) that releases
  x_{i+1} and g_{i+1} once g_i is made.
- ``two-chain``: the same with two recurrent chains, as an LSTM's cell
  and hidden states (c_i from h_{i-1} and c_{i-1}, h_i from c_i and h_{i-1}).
- ``skip``: x_i = f(x_{i-1}, x_{i-2}), each released once both its
  readers ran; then y = g(xn) needs the chain again.
- ``ladder``: the same with x_i = f(x_{i-1}, x_{i-4}), a skip over three.
- ``unet``: an encoder x1..xn (costs 1..5) whose every level a decoder
  reads on the way back, d_i = u(d_{i-1}, x_{n-i}), releasing both.
- ``residual``: ``backward`` whose steps also read a shared weight, and
  every eighth step the output eight before it (a residual block).
- ``dag``: ``backward`` over a random graph (seeded: the same trace at
  every call): each step reads its predecessor and up to two of the 64
  before it.

Released storages stay in the evicted neighbourhoods that the DTR scores
sum, so in all but the first the regions grow with the depth.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Callable, TextIO

from dtrlab import arguments


class _Lines:
    """Trace lines written to a text file."""

    def __init__(self, f: TextIO) -> None:
        self.write = f.write

    def constant(self, name: str, size: int = 8) -> None:
        self.write(f'{{"INSTRUCTION":"CONSTANT","NAME":"{name}"}}\n'
                   f'{{"INSTRUCTION":"MEMORY","NAME":"{name}","MEMORY":"{size}"}}\n')

    def call(self, op: str, args: list[str], result: str, time: int = 1, size: int = 100) -> None:
        quoted = ",".join(f'"{a}"' for a in args)
        self.write(f'{{"INSTRUCTION":"CALL","NAME":"{op}","ARGS":[{quoted}],"RESULT":["{result}"],"TIME":{time}}}\n'
                   f'{{"INSTRUCTION":"MEMORY","NAME":"{result}","MEMORY":"{size}"}}\n'
                   f'{{"INSTRUCTION":"ALIAS","NAME":"{result}","ALIAS":"-1"}}\n')

    def release(self, *names: str) -> None:
        for name in names:
            self.write(f'{{"INSTRUCTION":"RELEASE","NAME":"{name}"}}\n')


def _chain(t: _Lines, n: int) -> None:
    t.constant("x0")
    for i in range(1, n + 1):
        t.call("f", [f"x{i - 1}"], f"x{i}")
        if i > 1:
            t.release(f"x{i - 1}")
    t.release(f"x{n}")
    t.constant("w", 150)
    t.call("g", [f"x{n}"], "y")


def _backward(t: _Lines, n: int) -> None:
    t.constant("x0")
    for i in range(1, n + 1):
        t.call("f", [f"x{i - 1}"], f"x{i}", time=1 + i % 7)
    _backward_pass(t, n, [])


def _two_chain(t: _Lines, n: int) -> None:
    t.constant("h0")
    t.constant("c0")
    for i in range(1, n + 1):
        t.call("c", [f"h{i - 1}", f"c{i - 1}"], f"c{i}", time=3)
        t.call("h", [f"c{i}", f"h{i - 1}"], f"h{i}", time=2)
    t.call("loss", [f"h{n}"], f"g{n}")
    for i in range(n - 1, 0, -1):
        t.call("b", [f"g{i + 1}", f"h{i}", f"c{i}"], f"g{i}", time=2)
        t.release(f"g{i + 1}", f"h{i + 1}", f"c{i + 1}")
    t.release("h1", "c1", "g1")


def _skip_over(t: _Lines, n: int, k: int) -> None:
    """x_i = f(x_{i-1}, x_{i-k}) (x_{i-1} alone while i < k)."""
    t.constant("x0")
    for i in range(1, n + 1):
        t.call("f", [f"x{i - 1}"] + ([f"x{i - k}"] if i >= k else []), f"x{i}")
        if i > k:
            t.release(f"x{i - k}")
    t.release(*(f"x{i}" for i in range(max(1, n - k + 1), n + 1)))
    t.constant("w", 150)
    t.call("g", [f"x{n}"], "y")


def _skip(t: _Lines, n: int) -> None:
    _skip_over(t, n, 2)


def _ladder(t: _Lines, n: int) -> None:
    _skip_over(t, n, 4)


def _unet(t: _Lines, n: int) -> None:
    t.constant("x0")
    for i in range(1, n + 1):
        t.call("f", [f"x{i - 1}"], f"x{i}", time=1 + i % 5)
    t.call("u", [f"x{n}"], "d0")
    t.release(f"x{n}")
    for i in range(1, n + 1):
        t.call("u", [f"d{i - 1}", f"x{n - i}"], f"d{i}", time=2)
        t.release(f"d{i - 1}", f"x{n - i}")
    t.release(f"d{n}")


def _residual(t: _Lines, n: int) -> None:
    t.constant("w")
    t.constant("x0")
    for i in range(1, n + 1):
        skip = [f"x{i - 8}"] if i % 8 == 0 else []
        t.call("f", [f"x{i - 1}", "w", *skip], f"x{i}", time=1 + i % 5)
    _backward_pass(t, n, ["w"])


def _dag(t: _Lines, n: int) -> None:
    rng = random.Random(7)
    t.constant("x0")
    for i in range(1, n + 1):
        reads = sorted({i - 1} | {max(0, i - rng.randint(1, 64)) for _ in range(2)})
        t.call("f", [f"x{j}" for j in reads], f"x{i}", time=rng.randint(1, 9))
    _backward_pass(t, n, [])


def _backward_pass(t: _Lines, n: int, shared: list[str]) -> None:
    """g_i = b(g_{i+1}, x_i, *shared) from the loss down, releasing x_{i+1}
    and g_{i+1} once g_i is made."""
    t.call("loss", [f"x{n}"], f"g{n}")
    for i in range(n - 1, 0, -1):
        t.call("b", [f"g{i + 1}", f"x{i}", *shared], f"g{i}", time=2)
        t.release(f"g{i + 1}", f"x{i + 1}")
    t.release("x1", "g1")


#: Shape name -> (what writes it, the least depth it takes).
SHAPES: dict[str, tuple[Callable[[_Lines, int], None], int]] = {
    "chain": (_chain, 1), "backward": (_backward, 1), "two-chain": (_two_chain, 1), "skip": (_skip, 2),
    "ladder": (_ladder, 1), "unet": (_unet, 1), "residual": (_residual, 1), "dag": (_dag, 1),
}


def write(shape: str, n: int, path: str | os.PathLike) -> Path:
    """Write the trace of ``shape`` (a key of :data:`SHAPES`) at depth ``n`` to ``path``."""
    arguments.choice("shape", shape, tuple(SHAPES))
    writer, least = SHAPES[shape]
    n = arguments.integer("n", n, least)
    path = Path(path)
    with open(path, "w") as f:
        writer(_Lines(f), n)
    return path

