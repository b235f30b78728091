"""Capture DTR traces from stock PyTorch (optional extra ``capture``).

    from dtrlab import capture
    c = capture.capture_step(model, inputs, loss=lambda out: out.sum())
    capture.write_trace(c.text, "my-model.log")   # then dtrlab.load_trace(...)

or on the command line, for a model of the built-in set or one of your own::

    dtrlab capture resnet50 --out resnet50.log
    dtrlab capture my_package.my_module:make_workload --out mine.log

One training step is recorded (forward, backward, optimizer step) on the CPU
with a ``TorchDispatchMode`` (see :mod:`dtrlab.capture.recorder` for how
PyTorch's operators, views, in-place updates and frees map to the trace
format, and :mod:`dtrlab.capture.costs` for the cost model).
"""

from __future__ import annotations

import gc
import importlib
import os
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from dtrlab.arguments import BadArgument

try:
    import torch
except ImportError as e:  # the extra is optional
    raise ImportError("dtrlab.capture needs PyTorch: pip install 'dtrlab[capture]'") from e

from dtrlab.capture.costs import roofline
from dtrlab.capture.recorder import CaptureError, Recorder


@dataclass
class Workload:
    """What one training step runs: ``loss(model(*inputs))``, its gradients,
    then ``optimizer.step()`` (if any)."""

    model: torch.nn.Module
    inputs: Sequence[Any]
    loss: Callable[[Any], torch.Tensor]
    optimizer: torch.optim.Optimizer | None = None


@dataclass(frozen=True)
class Capture:
    """A captured trace and what was tracked beside it."""

    text: str
    #: Peak bytes of the storages the trace names, from PyTorch's own
    #: storage lifetimes (independent of the trace's lines).
    live_peak: int
    operators: int


def capture_step(model: torch.nn.Module, inputs: Sequence[Any], loss: Callable[[Any], torch.Tensor],
                 optimizer: torch.optim.Optimizer | None = None, measure: bool = False,
                 optimizer_step: bool = True) -> Capture:
    """Record one training step of ``model`` as a DTR trace.

    ``optimizer_step=False`` stops after the backward pass (the gradients are
    then the step's result, kept), as the 2020 traces do: the format pins
    constants, so a parameter updated in place stays resident beside its new
    value, and the optimizer step can set the trace's peak."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, not {type(model).__name__}")
    if not callable(loss):
        raise TypeError("loss must be a function of the model's output")
    if not isinstance(measure, bool) or not isinstance(optimizer_step, bool):
        raise TypeError("measure and optimizer_step must be True or False")
    rec = Recorder(cost=roofline, measure=measure)
    run_step(rec, model, inputs, loss, optimizer, optimizer_step)
    return Capture(rec.text, rec.live.peak, rec.operators)


def run_step(rec: Recorder, model: torch.nn.Module, inputs: Sequence[Any], loss: Callable[[Any], torch.Tensor],
             optimizer: torch.optim.Optimizer | None, optimizer_step: bool, collect: bool = True) -> float:
    """One training step under ``rec`` (a :class:`Recorder`, or a mode built
    on one, such as the runtime's): every caller runs exactly these Python
    statements, so that the same step gives the same command stream. Returns
    the loss; the trace is ``rec.text`` afterwards. ``collect=False`` skips
    the garbage collection before the step (a caller that ran one already;
    a full collection takes tens of milliseconds with PyTorch loaded)."""
    inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    if collect:
        gc.collect()
    enabled = gc.isenabled()
    gc.disable()  # releases when reference counts drop, not when a collection runs
    try:
        with rec:
            out = model(*inputs)
            value = loss(out)
            # (item() makes no tensor: the lines stay those of the step alone.)
            result = value.item()
            rec.sweep()
            rec.annotate("BACKWARD")
            value.backward()
            del out, value
            if optimizer is not None and optimizer_step:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
            # (Without an optimizer the gradients are the step's result: kept.)
        rec.finish()
    finally:
        if enabled:
            gc.enable()
    return result


def capture_workload(w: Workload, measure: bool = False, optimizer_step: bool = True) -> Capture:
    return capture_step(w.model, w.inputs, w.loss, w.optimizer, measure=measure, optimizer_step=optimizer_step)


def load_workload(spec: str, batch: int | None = None) -> Workload:
    """A built-in model by name (see :data:`dtrlab.capture.models.MODELS`), or
    ``package.module:function`` returning a :class:`Workload` (called with
    ``batch=`` when a batch size is given)."""
    from dtrlab.capture import models

    if spec in models.MODELS:
        return models.MODELS[spec](batch=batch or models.DEFAULT_BATCH[spec])
    if ":" not in spec:
        raise BadArgument(f"unknown model {spec!r}: one of {', '.join(models.MODELS)}, or module:function")
    module, _, fn = spec.partition(":")
    try:
        make = getattr(importlib.import_module(module), fn)
    except (ImportError, AttributeError) as e:
        raise BadArgument(f"{spec}: cannot import ({e})") from None
    w = make(batch=batch) if batch is not None else make()
    if not isinstance(w, Workload):
        raise TypeError(f"{spec} must return a dtrlab.capture.Workload, not {type(w).__name__}")
    return w


def write_trace(text: str, path: str | os.PathLike) -> None:
    from dtrlab.atomic import write_text

    write_text(path, text)


__all__ = ["Capture", "CaptureError", "Workload", "capture_step", "capture_workload", "load_workload", "run_step",
           "write_trace"]
