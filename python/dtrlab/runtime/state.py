"""What a training step changes, saved before it and put back after: the
model's parameters and buffers (batch-norm statistics), their gradients, the
optimizer's state and the random generator. The runtime runs the same step
more than once (its plan, the baseline, each budget) from the same start,
and after an out-of-memory failure leaves the model as it was."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch


@dataclass
class Snapshot:
    #: Each parameter and buffer, its saved copy and its storage's bytes.
    tensors: list[tuple[torch.Tensor, torch.Tensor, int]]
    grads: list[tuple[torch.Tensor, torch.Tensor | None]]
    optimizer: dict | None
    rng: torch.Tensor

    @classmethod
    def take(cls, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None) -> "Snapshot":
        with torch.no_grad():
            tensors = [(t, t.detach().clone(), t.untyped_storage().nbytes()) for t in _state_tensors(model)]
            grads = [(p, None if p.grad is None else p.grad.detach().clone()) for p in model.parameters()]
        state = copy.deepcopy(optimizer.state_dict()) if optimizer is not None else None
        return cls(tensors, grads, state, torch.get_rng_state())

    def restore(self, optimizer: torch.optim.Optimizer | None) -> None:
        """Put everything back, in place (the same tensor objects), so that
        the optimizer and the caller keep their references. A storage a
        failed step left evicted gets its bytes back first."""
        with torch.no_grad():
            for t, saved, nbytes in self.tensors:
                storage = t.untyped_storage()
                if storage.nbytes() != nbytes:
                    storage.resize_(nbytes)
                t.copy_(saved)
            for p, g in self.grads:
                p.grad = None if g is None else g.clone()
        if optimizer is not None and self.optimizer is not None:
            optimizer.load_state_dict(copy.deepcopy(self.optimizer))
        torch.set_rng_state(self.rng)


def _state_tensors(model: torch.nn.Module) -> list[torch.Tensor]:
    seen, out = set(), []
    for t in [*model.parameters(), *model.buffers()]:
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def results(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None,
            copy: bool = True) -> dict[str, torch.Tensor]:
    """What a step leaves behind, by name: every parameter and buffer, every
    gradient, and the optimizer's state tensors; copies, unless ``copy`` is
    False (the tensors themselves, to compare with at once)."""
    out = {}
    keep = (lambda t: t.detach().clone()) if copy else (lambda t: t.detach())
    with torch.no_grad():
        for name, t in [*model.named_parameters(), *model.named_buffers()]:
            out[f"state:{name}"] = keep(t)
        for name, p in model.named_parameters():
            if p.grad is not None:
                out[f"grad:{name}"] = keep(p.grad)
        if optimizer is not None:
            names = {id(p): n for n, p in model.named_parameters()}
            for p, st in optimizer.state.items():
                for key, v in sorted(st.items()):
                    if isinstance(v, torch.Tensor):
                        out[f"optimizer:{names.get(id(p), '?')}:{key}"] = keep(v)
    return out


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """A tensor's bytes (NaNs compare by their bits this way)."""
    if not t.numel():
        return t
    return (t if t.is_contiguous() else t.contiguous()).reshape(-1).view(torch.uint8)


def bitwise_differences(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> list[str]:
    """The names whose tensors are not bitwise equal (or present in only one)."""
    bad = sorted(set(a) ^ set(b))
    for k in sorted(set(a) & set(b)):
        x, y = a[k], b[k]
        same = x.dtype == y.dtype and x.shape == y.shape and torch.equal(_bytes(x), _bytes(y))
        if not same:
            bad.append(k)
    return bad
