"""The real runtime (dtrlab.runtime): small models the project does not ship
(tests/runtime_models.py), at budgets tight enough to rematerialize and at
the first that runs out of memory: results bitwise those of the step
without the runtime, every eviction and rematerialization the simulator's
on the captured trace, the ledger the engine's bytes after every operator,
nothing leaking into the next step, a clean out-of-memory failure."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the capture extra (torch) is not installed")

import dtrlab  # noqa: E402
import runtime_models  # noqa: E402
from dtrlab import capture, runtime  # noqa: E402
from dtrlab.exceptions import OutOfMemory, OutsideRuntime  # noqa: E402
from dtrlab.runtime.state import Snapshot, bitwise_differences, results  # noqa: E402

OPTIMIZERS = ("none", "sgd", "adam")


@pytest.fixture(autouse=True)
def _deterministic():
    with runtime.deterministic():
        yield


def performed(sim) -> list[tuple[str, int]]:
    """The simulator's events as the runtime performs them."""
    ev = sim.events_columns
    return [("remat", t) if k == "remat" else ("evict", s)
            for k, s, t in zip(ev["kind"], ev["storage_id"], ev["tensor_id"])]


def tight_ratios(trace, steps: tuple[float, ...] = (0.01, 0.001)) -> list[float]:
    """The two smallest ratios (on a grid, the finer one where the coarse
    one finds fewer) that run with rematerialization, and the largest that
    runs out of memory below them."""
    for step in steps:
        ok, oom = [], None
        for i in range(int(round(1 / step)), 0, -1):
            r = round(i * step, 4)
            sim = dtrlab.simulate(trace, ratio=r)
            if sim.status == "ok" and sim.remat_compute > 0:
                ok.append(r)
            elif sim.status == "oom":
                oom = r
                break
        if len(ok) >= 2 and oom is not None:
            return [*ok[-2:], oom]
    raise AssertionError("the grid finds no tight budgets")


def runner(name: str, optimizer: str) -> runtime.Runner:
    return runtime.Runner(runtime_models.MODELS[name](optimizer=optimizer), optimizer_step=optimizer != "none")


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("name", sorted(runtime_models.MODELS))
def test_at_tight_budgets_the_step_is_exact_and_its_decisions_the_simulators(name, optimizer):
    r = runner(name, optimizer)
    for ratio in tight_ratios(r.trace):
        sim = dtrlab.simulate(r.trace, ratio=ratio, events=True)
        run = r.run(ratio=ratio, strict=True)  # (strict: the ledger is the engine's after every operator)
        assert run.status == sim.status
        assert run.result == sim, (name, ratio)  # every field of the record, and the event log
        assert run.performed == performed(sim), (name, ratio)
        if run.status == "ok":
            assert run.equal, run.differences
            assert run.leaked == 0
        else:
            assert run.failure and run.equal is None


def remat_ops(r: runtime.Runner, ratio: float) -> set[str]:
    run = r.run(ratio=ratio)
    return {r.trace.op_name_of(t).split("/")[0] for kind, t in run.performed if kind == "remat"}


@pytest.mark.parametrize("name, optimizer, ops", [
    ("convnet", "none", {"native_batch_norm", "relu_", "max_pool2d_with_indices"}),
    ("dropout", "none", {"bernoulli_", "div_"}),  # (dropout on the CPU: a random in-place mask)
    ("lstm_cell", "none", {"sigmoid_", "tanh_"}),
    ("attention", "none", {"_scaled_dot_product_flash_attention_for_cpu"}),
    ("views", "none", {"split", "addmm"}),
])
def test_the_tight_budgets_recompute_what_makes_a_runtime_hard(name, optimizer, ops):
    """Batch norm (hidden writes), in-place writes, random operators, the
    gates written through views, attention: each is recomputed, and the
    step stays exact (the test above)."""
    r = runner(name, optimizer)
    seen = set().union(*(remat_ops(r, ratio) for ratio in tight_ratios(r.trace)[:2]))
    assert ops <= seen, sorted(seen)


def test_an_optimizer_step_runs_its_multi_tensor_kernels_a_tensor_at_a_time():
    r = runner("convnet", "adam")
    foreach = [line for line in r.plan.lines if '"MUTATE"' in line and '"_foreach_' in line]
    params = len(list(r.workload.model.parameters()))
    assert foreach and len(foreach) % params == 0
    run = r.run(ratio=tight_ratios(r.trace)[0], strict=True)
    assert run.equal


@pytest.mark.parametrize("name", sorted(runtime_models.MODELS))
def test_the_command_stream_is_the_capture_of_the_same_step(name):
    r = runner(name, "sgd")
    captured = capture.capture_workload(runtime_models.MODELS[name](optimizer="sgd"))
    assert r.plan.text == captured.text
    run = r.run(ratio=tight_ratios(r.trace)[0])
    assert run.stream_sha256 == hashlib.sha256(captured.text.encode()).hexdigest()


def _live_tensors() -> int:
    gc.collect()
    # (type(), not isinstance(): a lazy module's attributes must not be touched)
    return sum(type(o) in (torch.Tensor, torch.nn.Parameter) for o in gc.get_objects())


@pytest.mark.parametrize("name", sorted(runtime_models.MODELS))
def test_three_consecutive_steps_leak_nothing(name):
    make = runtime_models.MODELS[name]
    w = make(optimizer="sgd")
    plain = make(optimizer="sgd")
    counts = []
    for step in range(3):
        # (Each step's random draws, dropout's, from the same generator state in both.)
        torch.manual_seed(step)
        r = runtime.Runner(w)
        run = r.run(ratio=tight_ratios(r.trace)[0], strict=True)
        assert run.status == "ok" and run.leaked == 0
        torch.manual_seed(step)
        capture.capture_workload(plain)  # the same step without the runtime, for comparison
        assert not bitwise_differences(results(plain.model, plain.optimizer), results(w.model, w.optimizer)), step
        del r, run
        counts.append(_live_tensors())
    # (The first step makes the momentum buffers.)
    assert counts[1] == counts[2]


@pytest.mark.parametrize("name", sorted(runtime_models.MODELS))
def test_out_of_memory_names_the_operator_and_budget_and_leaves_the_model_intact(name):
    make = runtime_models.MODELS[name]
    w = make(optimizer="sgd")
    r = runtime.Runner(w)
    oom = tight_ratios(r.trace)[-1]
    before = results(w.model, w.optimizer)
    with pytest.raises(OutOfMemory) as e:
        runtime.run_step(w.model, w.inputs, w.loss, w.optimizer, ratio=oom)
    budget = dtrlab.engine.budget_for_ratio(dtrlab.baseline(r.trace).peak, oom)
    assert e.value.budget == budget and f"{budget:,} B" in str(e.value)
    assert e.value.operator and e.value.operator in str(e.value)
    assert e.value.result.status == "oom"
    assert not bitwise_differences(before, results(w.model, w.optimizer))
    assert r.run(ratio=oom).leaked == 0  # (the abandoned step's tensors are let go)
    # Usable: a step at a budget that fits is the step without the runtime.
    plain = make(optimizer="sgd")
    torch.manual_seed(7)  # (the same random draws in both: dropout's)
    capture.capture_workload(plain)
    torch.manual_seed(7)
    run = runtime.run_step(w.model, w.inputs, w.loss, w.optimizer, ratio=tight_ratios(r.trace)[0])
    assert run.status == "ok"
    assert not bitwise_differences(results(plain.model, plain.optimizer), results(w.model, w.optimizer))


@pytest.mark.parametrize("trigger", ["ledger", "allocator"])
def test_a_measured_trigger_keeps_the_step_exact(trigger):
    """Whatever the trigger decides, the step's results are the step's."""
    r = runner("convnet", "sgd")
    for ratio in tight_ratios(r.trace)[:2]:
        run = r.run(ratio=ratio, trigger=trigger)
        assert run.status in ("ok", "oom")
        if run.status == "ok":
            assert run.equal, run.differences
    if trigger == "ledger":
        # The ledger is the engine's bytes: it decides as the engine does.
        ratio = tight_ratios(r.trace)[0]
        assert r.run(ratio=ratio, trigger="ledger").performed == performed(
            dtrlab.simulate(r.trace, ratio=ratio, events=True))


def test_a_write_the_format_cannot_express_is_refused_by_name():
    r = runtime.Runner(runtime_models.overlapping_write(), optimizer_step=False)
    with pytest.raises(OutsideRuntime, match="written in place through another view"):
        r.run(ratio=1.0)


def test_the_no_op_baseline_and_the_time_split():
    r = runner("views", "none")
    base = r.baseline(repeat=2)
    assert base["calls"] > 0 and 0 < base["operators"] < base["wall"]
    run = r.run(ratio=tight_ratios(r.trace)[0])
    t = run.timing
    assert t["wall"] >= t["operators"] + t["engine"] + t["recompute"]
    assert t["recompute"] > 0 and t["bookkeeping"] is not None
    m = run.memory
    assert m["ledger_peak"] == m["engine_peak"] <= m["budget"]
    # (No operator's outputs exceed the trace's bottleneck: its outputs and inputs at their largest.)
    assert m["ledger_peak"] <= m["transient_peak"] <= m["budget"] + dtrlab.baseline(r.trace).bottleneck


@pytest.mark.parametrize("kwargs, error", [
    (dict(ratio=-0.5), ValueError),
    (dict(ratio=0.5, budget=10), ValueError),
    (dict(budget=1.5), TypeError),
    (dict(heuristic="nope"), ValueError),
    (dict(trigger="guess"), ValueError),
    (dict(cap=0.5), ValueError),
    (dict(check="yes"), TypeError),
])
def test_bad_arguments_are_refused_by_name(kwargs, error):
    r = runner("views", "none")
    with pytest.raises(error):
        r.run(**kwargs)


def test_a_runner_needs_a_workload():
    with pytest.raises(TypeError, match="Workload"):
        runtime.Runner(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="costs"):
        runtime.Runner(runtime_models.views(), costs="guessed")


def test_a_snapshot_puts_back_a_storage_left_evicted():
    w = runtime_models.views()
    snap = Snapshot.take(w.model, w.optimizer)
    p = next(w.model.parameters())
    p.untyped_storage().resize_(0)
    snap.restore(w.optimizer)
    assert p.untyped_storage().nbytes() == p.numel() * p.element_size()


def run_dtr(*args: str, cwd=None) -> subprocess.CompletedProcess:
    tests = str(Path(__file__).parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "dtrlab", "run-dtr", *args], capture_output=True, text=True,
                          env=env, timeout=600, cwd=cwd)


@pytest.mark.parametrize("name", sorted(runtime_models.MODELS))
def test_the_command_line_runs_a_model_of_ones_own_beside_the_simulator(name, tmp_path):
    r = runner(name, "none")
    ratios = tight_ratios(r.trace)
    for ratio in ratios[:1] + ratios[-1:]:
        p = run_dtr(f"runtime_models:{name}", "--ratio", str(ratio), "--json", "--events", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout)
        sim = dtrlab.simulate(r.trace, ratio=ratio, events=True)
        assert out["status"] == sim.status and out["simulator"]["same_decisions"]
        assert out["engine"] == json.loads(json.dumps(sim.to_dict()))
        assert [tuple(e) for e in out["events"]] == performed(sim)
        assert out["equal"] is (True if sim.status == "ok" else None)
        assert set(out["timing"]) >= {"wall", "operators", "engine", "recompute", "bookkeeping", "baseline_wall"}
    human = run_dtr(f"runtime_models:{name}", "--ratio", str(ratios[0]), cwd=tmp_path)
    assert human.returncode == 0 and "bitwise equal              yes" in human.stdout
    assert not list(tmp_path.iterdir())  # (it writes nothing)


@pytest.mark.parametrize("args, message", [
    (["nonsense", "--ratio", "0.5"], "unknown model 'nonsense'"),
    (["runtime_models:views", "--ratio", "-1"], "--ratio must be > 0"),
    (["runtime_models:views", "--ratio", "0.5", "--threads", "0"], "--threads must be in"),
    (["runtime_models:views", "--ratio", "0.5", "--repeat", "0"], "--repeat must be in"),
])
def test_the_command_line_refuses_bad_arguments_in_one_line(args, message):
    p = run_dtr(*args)
    assert p.returncode == 2 and p.stderr.startswith("dtrlab: error: ") and message in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_the_command_line_reports_a_step_outside_the_runtime_in_one_line():
    p = run_dtr("runtime_models:overlapping_write", "--ratio", "1.0", "--no-optimizer-step")
    assert p.returncode == 1 and "written in place through another view" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
