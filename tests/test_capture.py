"""Capturing traces from stock PyTorch (dtrlab.capture): small modules whose
traces can be checked line by line, the peak against PyTorch's own storage
lifetimes, determinism, the optimizer's kernels, replay by both engines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the capture extra (torch) is not installed")

import dtrlab  # noqa: E402
from dtrlab import capture  # noqa: E402
from dtrlab.capture import costs  # noqa: E402


def lines(c: capture.Capture) -> list[dict]:
    return [json.loads(x) for x in c.text.splitlines()]


def short(c: capture.Capture) -> list[str]:
    """Each line as `INSTR name args -> results` (sizes and aliases kept, costs dropped)."""
    out = []
    for d in lines(c):
        i = d["INSTRUCTION"]
        if i in ("CALL", "MUTATE"):
            out.append(f"{i} {d['NAME']} {','.join(d['ARGS'])} -> {','.join(d.get('RESULT', []))}")
        elif i == "MEMORY":
            out.append(f"MEMORY {d['NAME']} {d['MEMORY']}")
        elif i == "ALIAS":
            out.append(f"ALIAS {d['NAME']} {d['ALIAS']}")
        elif i == "ANNOTATE":
            out.append(f"ANNOTATE {d['ANNOTATION']}")
        else:
            out.append(f"{i} {d['NAME']}")
    return out


def replay(c: capture.Capture, tmp_path: Path, name: str = "t.log") -> dtrlab.Trace:
    path = tmp_path / name
    capture.write_trace(c.text, path)
    return dtrlab.load_trace(path)


class Scale(torch.nn.Module):
    """y = sum(relu(x @ w)): one parameter, no bias."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4, 2))

    def forward(self, x):
        return torch.relu(x @ self.w)


def test_a_two_layer_step_gives_exactly_the_expected_lines():
    x = torch.ones(3, 4)
    c = capture.capture_step(Scale(), (x,), lambda out: out.sum())
    assert short(c) == [
        "ANNOTATE START",
        # forward: the batch and the weight are constants at first use
        "CONSTANT x0", "MEMORY x0 48", "CONSTANT x1", "MEMORY x1 32",
        "CALL mm x0,x1 -> x2", "MEMORY x2 24", "ALIAS x2 -1",
        "CALL relu x2 -> x3", "MEMORY x3 24", "ALIAS x3 -1",
        "CALL detach x3 -> x4", "MEMORY x4 24", "ALIAS x4 0",  # relu's output saved for backward: a view
        "RELEASE x2",  # mm's output: its backward needs only the constants
        "CALL sum x3 -> x5", "MEMORY x5 4", "ALIAS x5 -1",
        "ANNOTATE BACKWARD",
        "CALL ones_like x5 -> x6", "MEMORY x6 4", "ALIAS x6 -1",
        "CALL expand x6 -> x7", "MEMORY x7 4", "ALIAS x7 0",
        "CALL detach x4 -> x8", "MEMORY x8 24", "ALIAS x8 0",
        "CALL threshold_backward x7,x8 -> x9", "MEMORY x9 24", "ALIAS x9 -1",
        "RELEASE x4", "RELEASE x7", "RELEASE x8",  # relu's backward is done with them
        "CALL t x0 -> x10", "MEMORY x10 48", "ALIAS x10 0",
        "CALL mm x10,x9 -> x11", "MEMORY x11 32", "ALIAS x11 -1",
        "RELEASE x9", "RELEASE x10",
        "CALL detach x11 -> x12", "MEMORY x12 32", "ALIAS x12 0",  # the weight's .grad
        # after the step: the output, the loss and its seed go; the gradient stays
        "RELEASE x3", "RELEASE x5", "RELEASE x6", "RELEASE x11",
    ]


def test_a_view_and_an_in_place_update():
    """A view is an alias of its one argument; an in-place operator is a
    MUTATE of the tensor it writes, placed first."""

    def f(x):
        h = x * 2.0
        v = h.view(-1)
        v.add_(1.0)
        return v

    c = capture.capture_step(torch.nn.Identity(), (torch.ones(2, 3, requires_grad=True),),
                             lambda x: f(x).sum())
    s = short(c)
    mul = s.index("CALL mul x0 -> x1")
    assert s[mul:mul + 7] == ["CALL mul x0 -> x1", "MEMORY x1 24", "ALIAS x1 -1",
                              "CALL view x1 -> x2", "MEMORY x2 24", "ALIAS x2 0",
                              "MUTATE add_ x2 -> "]
    forward = s[:s.index("ANNOTATE BACKWARD")]
    assert [x for x in forward if x.startswith("MUTATE")] == ["MUTATE add_ x2 -> "]
    assert forward[-2:] == ["RELEASE x1", "RELEASE x2"]  # f's locals, gone when it returns
    assert all(d["MUTATE"] == [0] for d in lines(c) if d["INSTRUCTION"] == "MUTATE")


def test_a_tensor_freed_early_is_released_where_pytorch_frees_it():
    class Early(torch.nn.Module):
        def forward(self, x):
            a = x * 3.0
            b = a + 1.0
            del a  # freed here, before c is made
            c = b * b
            return c

    c = capture.capture_step(Early(), (torch.ones(8, requires_grad=True),), lambda out: out.sum())
    s = short(c)
    # `add`'s input a is released right after add, before the product runs.
    i = s.index("CALL add x1 -> x2")
    assert s[i + 3] == "RELEASE x1" and s[i + 4].startswith("CALL mul x2,x2")


def test_the_trace_peak_is_pytorchs_live_peak(tmp_path):
    """Without in-place updates the replay's peak at an unlimited budget is
    the peak of the storages PyTorch held, tracked beside the trace."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    c = capture.capture_step(model, (x,), lambda out: torch.nn.functional.mse_loss(out, y))
    t = replay(c, tmp_path)
    assert dtrlab.baseline(t).peak == c.live_peak
    r = dtrlab.simulate(t, ratio=1.0)
    assert (r.status, r.overhead) == ("ok", 1.0)


def test_an_optimizer_step_writes_each_parameter_once():
    """One MUTATE per parameter, also from a multi-tensor (foreach) kernel,
    whose cost is split over the tensors it writes."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 2))
    x = torch.randn(3, 4)
    per_param = capture.capture_step(model, (x,), lambda out: out.sum(),
                                     torch.optim.SGD(model.parameters(), lr=0.1, foreach=False))
    fused = capture.capture_step(model, (x,), lambda out: out.sum(),
                                 torch.optim.SGD(model.parameters(), lr=0.1, foreach=True))
    for c in (per_param, fused):
        mutated = [d["ARGS"][0] for d in lines(c) if d["INSTRUCTION"] == "MUTATE"]
        assert len(mutated) == len(set(mutated)) == 4, short(c)
    without = capture.capture_step(model, (x,), lambda out: out.sum(),
                                   torch.optim.SGD(model.parameters(), lr=0.1), optimizer_step=False)
    assert not [d for d in lines(without) if d["INSTRUCTION"] == "MUTATE"]
    foreach = [d for d in lines(fused) if d["INSTRUCTION"] == "MUTATE"]
    assert {d["NAME"] for d in foreach} == {"_foreach_add_"}
    assert all(len(d["ARGS"]) == 2 for d in foreach)  # the parameter and its gradient


def test_capturing_twice_gives_the_same_bytes():
    from dtrlab.capture import models

    a = capture.capture_workload(models.unet(batch=1, size=32))
    b = capture.capture_workload(models.unet(batch=1, size=32))
    assert a.text == b.text and a.operators > 100


@pytest.mark.parametrize("op", ["mm", "_foreach_add_.List", "aten::odd name", 'quote"op'])
@pytest.mark.parametrize("args", [[], ["x0"], ["x1", "x12"]])
def test_the_line_writers_write_what_line_writes(op, args):
    """The per-instruction writers are ``_line`` without its per-field work:
    the same bytes, and json.dumps's for a name that needs escaping."""
    from dtrlab.capture import recorder as r

    pairs = [
        (r._release_line("x3"), r._line(INSTRUCTION="RELEASE", NAME="x3")),
        (r._constant_line("x0"), r._line(INSTRUCTION="CONSTANT", NAME="x0")),
        (r._memory_line("x7", 4096), r._line(INSTRUCTION="MEMORY", NAME="x7", MEMORY="4096")),
        (r._alias_line("x7", "-1"), r._line(INSTRUCTION="ALIAS", NAME="x7", ALIAS="-1")),
        (r._call_line(op, args, ["x5", "x6"], 17),
         r._line(INSTRUCTION="CALL", NAME=op, ARGS=args, RESULT=["x5", "x6"], TIME="17")),
        (r._call_line(op, args, [], 0), r._line(INSTRUCTION="CALL", NAME=op, ARGS=args, RESULT=[], TIME="0")),
        (r._mutate_line(op, args, 9), r._line(INSTRUCTION="MUTATE", NAME=op, ARGS=args, MUTATE=[0], TIME="9")),
    ]
    for fast, general in pairs:
        assert fast == general
        json.loads(fast)


def test_costs_follow_the_stated_roofline():
    a, b = torch.ones(64, 128), torch.ones(128, 32)
    out = torch.mm(a, b)
    flops = 2 * 64 * 128 * 32
    moved = 4 * (64 * 128 + 128 * 32 + 64 * 32)
    expected = costs.LAUNCH_NS + int(-(-max(flops / costs.PEAK_FLOPS, moved / costs.BANDWIDTH) * 1e9 // 1))
    assert costs.roofline(torch.ops.aten.mm.default, (a, b), {}, out) == expected
    assert costs.roofline(torch.ops.aten.t.default, (a,), {}, a.t()) == costs.LAUNCH_NS


def test_remembered_flop_counts_are_pytorchs_for_every_call():
    # The counts are remembered by what a formula reads: calls that differ
    # only in a list of numbers (a stride, an output mask) or in a shape
    # inside a list of tensors must not share one.
    from torch.utils.flop_counter import flop_registry

    conv = torch.ops.aten.convolution.default
    bwd = torch.ops.aten.convolution_backward.default
    x, w = torch.ones(2, 3, 16, 16), torch.ones(4, 3, 3, 3)
    calls = []
    for stride in ([1, 1], [2, 2], [2, 1]):
        args = (x, w, None, stride, [1, 1], [1, 1], False, [0, 0], 1)
        out = conv(*args)
        calls.append((conv, args, out))
        g = torch.ones_like(out)
        for mask in ([True, True, False], [False, True, False], [True, False, False]):
            b_args = (g, x, w, [4], stride, [1, 1], [1, 1], False, [0, 0], 1, mask)
            calls.append((bwd, b_args, bwd(*b_args)))
    cat = torch.ops.aten.cat.default
    for parts in ([torch.ones(2, 3), torch.ones(2, 3)], [torch.ones(2, 3), torch.ones(5, 3)]):
        calls.append((cat, (parts,), cat(parts)))
    for _ in range(2):  # (the second pass reads what the first remembered)
        for func, args, out in calls:
            formula = flop_registry.get(func._overloadpacket)
            expected = int(formula(*args, out_val=out)) if formula is not None else 0
            assert costs.operator_flops(func, args, {}, out) == expected
    forward = [c for c in calls if c[0] is conv]
    assert len({costs.operator_flops(f, a, {}, o) for f, a, o in forward}) == 3
    assert len({costs.operator_flops(f, a, {}, o) for f, a, o in calls[1:3]}) == 2  # (two masks)

    # A formula may read any value: keys differ wherever the arguments do
    # (the counts of PyTorch's formulas above depend on shapes alone).
    def key(*args):
        leaves = []
        costs._call_key(args, leaves)
        return tuple(leaves)

    assert key(x, [1, 1]) != key(x, [2, 1]) != key(x, (2, 1)) != key(x, [2, 1, 0])
    assert key([x, x]) != key([x, w]) and key([x, 1]) != key([x, 2]) and key([[1], 2]) != key([[2], 2])
    assert key({"a": [1]}) != key({"a": [2]}) and key(x, 1) == key(torch.zeros(2, 3, 16, 16), 1)


def test_the_recorders_view_hint_gives_the_cost_models_own_cost():
    """The recorder tells the cost model whether a call is a view (it asks
    for each storage once per call); every call costs what the model finds
    by itself, views among them."""
    from dtrlab.capture import models
    from dtrlab.capture.recorder import Recorder

    hinted = []

    def cost(func, args, kwargs, out, ins, outs, view=None):
        got = costs.roofline(func, args, kwargs, out, ins, outs, view=view)
        assert got == costs.roofline(func, args, kwargs, out, ins, outs), func
        hinted.append(view)
        return got

    w = models.lstm_lm(batch=2, tokens=4)
    capture.run_step(Recorder(cost=cost), w.model, w.inputs, w.loss, w.optimizer, True)
    assert True in hinted and False in hinted  # views and the rest
    assert None in hinted  # the in-place writes (the optimizer's), which the model tests itself


SMALL = {"resnet50": dict(batch=1), "vit_b_16": dict(batch=1), "gpt2_small": dict(batch=1, tokens=8),
         "unet": dict(batch=1, size=32), "lstm_lm": dict(batch=2, tokens=6)}


def test_every_built_in_model_has_a_small_test_size():
    from dtrlab.capture import models

    assert set(SMALL) == set(models.MODELS)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_captured_models_replay_exactly_at_their_peak(name, tmp_path):
    """Every built-in model (the workflow's, at a small size) loads and
    replays at its peak with overhead 1.0."""
    from dtrlab.capture import models

    small = SMALL[name]
    t = replay(capture.capture_workload(models.MODELS[name](**small)), tmp_path)
    r = dtrlab.simulate(t, ratio=1.0)
    assert (r.status, r.overhead, r.remat_compute) == ("ok", 1.0, 0)  # (eager evictions of freed storages count)


@pytest.mark.simrd
@pytest.mark.skipif(not os.environ.get("DTRLAB_SIMRD"), reason="DTRLAB_SIMRD not set")
@pytest.mark.parametrize("name", ["unet", "lstm_lm"])
def test_simrd_replays_captured_models_as_we_do(name, tmp_path):
    """Differential: the reference simulator gives the same records and
    events as the engine on captured traces, at several budgets."""
    from dtrlab.capture import models

    t = replay(capture.capture_workload(models.MODELS[name](**SMALL[name])), tmp_path)
    for ratio in (1.0, 0.95, 0.9, 0.8, 0.7, 0.5):
        ours = dtrlab.simulate(t, ratio=ratio, events=True)
        ref = dtrlab.simulate(t, ratio=ratio, events=True, engine="simrd")
        assert ours.to_dict(evicted_ids=True) == ref.to_dict(evicted_ids=True), (name, ratio)
        assert ours.events_columns == ref.events_columns, (name, ratio)


def test_the_command_line_captures_a_model_of_ones_own(tmp_path):
    (tmp_path / "mine.py").write_text(textwrap.dedent("""
        import torch
        from dtrlab.capture import Workload

        def make(batch=2):
            torch.manual_seed(0)
            model = torch.nn.Linear(4, 2)
            return Workload(model, (torch.randn(batch, 4),), lambda out: out.sum())
    """))
    env_path = {"PYTHONPATH": str(tmp_path)}
    p = subprocess.run([sys.executable, "-m", "dtrlab", "capture", "mine:make", "--batch", "3", "--out",
                        str(tmp_path / "mine.log")], capture_output=True, text=True,
                       env={**os.environ, **env_path}, timeout=300)
    assert p.returncode == 0, p.stderr
    assert dtrlab.simulate(str(tmp_path / "mine.log"), ratio=1.0).ok
    bad = subprocess.run([sys.executable, "-m", "dtrlab", "capture", "nonsense", "--out", str(tmp_path / "x")],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stderr.startswith("dtrlab: error: unknown model 'nonsense'")
    assert len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "x").exists()


def test_the_capture_step_writes_a_trace_with_its_provenance(tmp_path):
    from dtrlab import provenance, steps
    from dtrlab.steps import Named, Step

    out = tmp_path / "captured" / "pt_lstm_lm.log"
    steps.run(Step("capture_trace", Named(), Named(trace=str(out)),
                   Named(model="lstm_lm", batch=1, optimizer_step=False)))
    t = dtrlab.load_trace(out)
    assert t.key == "pt_lstm_lm" and dtrlab.simulate(t, ratio=1.0).ok
    assert json.loads(provenance.sidecar_path(out).read_text())["params"] == {
        "model": "lstm_lm", "batch": 1, "optimizer_step": False}


def test_the_schema_names_the_built_in_models_and_their_batches():
    from dtrlab import config
    from dtrlab.capture import models

    schema = config.schema()["properties"]["capture"]["properties"]
    assert schema["models"]["items"]["enum"] == list(models.MODELS) == schema["models"]["default"]
    assert models.DEFAULT_BATCH == schema["batch"]["default"] and set(models.DEFAULT_BATCH) == set(models.MODELS)
