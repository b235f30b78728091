"""How to run an operator again: the call as it was made, with each tensor
argument replaced by the engine's tensor id (so a recipe holds no tensor of
the step, whose release the recorder must still see).

A rerun gives the same bytes when the operator is deterministic and sees
the same inputs and generator state (the runtime fixes threads and asks for
deterministic algorithms); what differs from the first run is handled here:

- a **random** operator (tagged ``nondeterministic_seeded``: dropout,
  ``bernoulli_``, ...) reruns from the generator state saved before its
  first run, and leaves the generator as it found it;
- **batch norm** in training updates its running statistics as a hidden
  side effect: a rerun passes none (its outputs do not depend on them);
- an **in-place** operator reruns on a copy of its input's old bytes, in the
  buffer that holds the new version (see :mod:`dtrlab.runtime.storages`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import torch

from dtrlab.capture import flat

#: Operators whose training-mode call also writes arguments its schema does
#: not mark as written, with the positions of those arguments and of the
#: ``training`` flag.
HIDDEN_WRITES = {
    "native_batch_norm": ((3, 4), 5),
}


@dataclass(slots=True, unsafe_hash=True)
class Ref:
    """A tensor argument: the engine's tensor id. (Slotted, not frozen: a
    recipe is made at every operator call, and a frozen dataclass's
    constructor costs several times more.)"""

    tensor: int


@dataclass(slots=True, unsafe_hash=True)
class Written(Ref):
    """The tensor an in-place operator writes."""


@dataclass
class Recipe:
    func: Any
    #: ``(args, kwargs)`` with every tensor a :class:`Ref`.
    call: tuple
    #: The generator and its state before the first run (random operators).
    rng: tuple[torch.Generator, torch.Tensor] | None
    #: For an in-place operator: the engine's id of the tensor it writes.
    target: int | None = None

    @classmethod
    def of(cls, func, args, kwargs, ids: dict[int, int],
           rng: tuple[torch.Generator, torch.Tensor] | None, target: torch.Tensor | None = None) -> "Recipe":
        """The call ``func(*args, **kwargs)``; ``ids``: the engine's id of
        each of its tensors, by ``_cdata``."""
        hidden = _hidden_writes(func)
        if hidden is not None:
            positions, training = hidden
            if len(args) > training and args[training]:
                args = tuple(None if i in positions else a for i, a in enumerate(args))
        call = flat.replace((args, kwargs), lambda t: (Written if t is target else Ref)(ids[t._cdata]))
        return cls(func, call, rng, ids[target._cdata] if target is not None else None)

    def run(self, view: Callable[[int], torch.Tensor], target: torch.Tensor | None = None):
        """Call the operator again on ``view(tensor id)`` of each input
        (``target`` replaces the written input of an in-place operator);
        returns the result and the inputs given."""
        given = []

        def arg(r: Ref) -> torch.Tensor:
            t = target if isinstance(r, Written) and target is not None else view(r.tensor)
            given.append(t)
            return t

        args, kwargs = flat.replace(self.call, arg, Ref)
        if self.rng is None:
            return self.func(*args, **kwargs), given
        gen, state = self.rng
        saved = gen.get_state()
        gen.set_state(state)
        try:
            return self.func(*args, **kwargs), given
        finally:
            gen.set_state(saved)


@functools.lru_cache(maxsize=None)
def _hidden_writes(func) -> tuple[tuple[int, ...], int] | None:
    return HIDDEN_WRITES.get(func.__name__.split(".")[0])


@functools.lru_cache(maxsize=None)
def is_random(func) -> bool:
    return torch.Tag.nondeterministic_seeded in func.tags


def generator_state(func, args, kwargs) -> tuple[torch.Generator, torch.Tensor] | None:
    """For a random operator, the generator it draws from (one passed to it,
    else its device's default) and that generator's state now; else None."""
    if not is_random(func):
        return None
    gen = next((a for a in [*args, *kwargs.values()] if isinstance(a, torch.Generator)), None)
    if gen is None:
        ts = flat.arguments(args, kwargs)
        device = ts[0].device if ts else torch.device("cpu")
        if isinstance(kwargs.get("device"), (str, torch.device)):
            device = torch.device(kwargs["device"])
        if device.type == "cpu":
            gen = torch.default_generator
        elif device.type == "cuda":
            gen = torch.cuda.default_generators[device.index or 0]
        else:
            raise RuntimeError(f"{func}: no default generator known for device {device}")
    return gen, gen.get_state()


def fresh_outputs(out, inputs: list) -> list[torch.Tensor]:
    """The tensors a call returned that are not its inputs, in order (the
    recorder's outputs)."""
    ids = {a._cdata for a in inputs if isinstance(a, torch.Tensor)}
    return [o for o in flat.tensors(out) if o._cdata not in ids]
