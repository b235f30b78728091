"""Deep rematerialization chains and engine faults never crash the interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest

import dtrlab
from dtrlab import _engine, synthetic

N_CHAIN = 100_000


def _chain(tmp_path, n: int = N_CHAIN):
    return dtrlab.load_trace(_chain_file(tmp_path, n))


def _chain_file(tmp_path, n: int):
    """x0 (constant) -> x1 -> ... -> xn, each released once its successor exists
    (so it is evicted eagerly); xn is released too, a 150-byte constant w is
    pinned, then `y = g(xn)` rematerializes the whole chain, n levels deep."""
    return synthetic.write("chain", n, tmp_path / "chain.log")


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    return _chain(tmp_path_factory.mktemp("chain"))


# LRU keeps no evicted-neighbourhood regions; DTR's upkeep along the chain
# (quadratic in the reference) is tested below.
def test_deep_chain_completes_at_a_tiny_budget(chain):
    # Constants (158 B) plus two chain tensors: just enough to walk the chain.
    r = dtrlab.simulate(chain, budget=158 + 200, cap=None, heuristic="LRU")
    assert r.status == "ok"
    assert r.max_nesting_depth == N_CHAIN + 1  # y, then x_n ... x_1
    assert r.remat_compute == N_CHAIN


def test_deep_chain_fails_cleanly_at_the_bottom(chain):
    # The forward pass fits (8 + 200 B); the rematerialization, with w pinned, does not.
    r = dtrlab.simulate(chain, budget=300, cap=None, heuristic="LRU")
    assert r.status == "oom"
    assert r.fail["depth"] == N_CHAIN  # computing x2 with x1 locked, under y, xn, ..., x3
    assert (r.fail["request"], r.fail["over_by"], r.fail["pinned"]) == (100, 58, 258)
    assert r.fail["tensor_name"] == "x1"  # the last materialization requested


@pytest.mark.parametrize("heuristic", ["DTR", "MSPS"])
def test_deep_chain_with_regions_is_the_eager_run(chain, heuristic):
    """Along the chain, regions are taken over from the parent and absorbed
    by moving them, not walked: the run equals the reference's order of work."""
    r = dtrlab.simulate(chain, budget=158 + 200, cap=None, heuristic=heuristic)
    assert r.status == "ok" and r.max_nesting_depth == N_CHAIN + 1 and r.remat_compute == N_CHAIN


@pytest.mark.parametrize("heuristic", ["DTR", "MSPS", "AbE"])
def test_a_shorter_chain_with_regions_equals_the_eager_run(tmp_path, heuristic):
    trace = _chain(tmp_path, 3_000)
    runs = [dtrlab.simulate(trace, budget=158 + 200, cap=None, heuristic=heuristic, events=True, eager_regions=eager)
            for eager in (False, True)]
    assert runs[0].to_dict(evicted_ids=True) == runs[1].to_dict(evicted_ids=True)
    assert runs[0].events_columns == runs[1].events_columns
    assert runs[0].evictions == 2 * 3_000 - 1


@pytest.mark.parametrize("shape", ["backward", "two-chain", "skip", "ladder", "unet", "residual", "dag"])
@pytest.mark.parametrize("heuristic", ["DTR", "MSPS", "AbE"])
def test_training_shapes_with_regions_equal_the_eager_run(tmp_path, shape, heuristic):
    """A backward pass over released activations: regions renewed at once
    where every neighbour is resident, and taken over whole by a region of
    empty interior, give the run of regions rebuilt as the reference does."""
    trace = dtrlab.load_trace(synthetic.write(shape, 400, tmp_path / f"{shape}.log"))
    # (The random graph runs out of memory below a quarter of its peak.)
    for ratio in (0.5, 0.4, 0.3) if shape == "dag" else (0.5, 0.3, 0.15):
        runs = [dtrlab.simulate(trace, ratio=ratio, cap=None, heuristic=heuristic, events=True, eager_regions=eager)
                for eager in (False, True)]
        assert runs[0].status == "ok" and runs[0].evictions > 400
        assert runs[0].to_dict(evicted_ids=True) == runs[1].to_dict(evicted_ids=True)
        assert runs[0].events_columns == runs[1].events_columns
        checked = dtrlab.simulate(trace, ratio=ratio, cap=None, heuristic=heuristic, self_check=True)
        assert checked.to_dict(evicted_ids=True) == runs[0].to_dict(evicted_ids=True)


def test_stale_regions_let_their_storages_go(tmp_path):
    """At half its peak a chain whose steps read the two before them gives
    many resident storages a region as long as the chain; stale ones let
    theirs go. 20,000 deep, the engine held 0.6 GB before; now under 128 MiB
    (its own count of the bytes it holds, checked at every command)."""
    trace = dtrlab.load_trace(synthetic.write("skip", 20_000, tmp_path / "skip.log"))
    r = dtrlab.simulate(trace, ratio=0.5, cap=None, memory_limit=128 * 2**20)
    assert r.status == "ok" and r.evictions == 30_002


def test_synthetic_shapes_validate_their_arguments(tmp_path):
    with pytest.raises(ValueError, match="shape"):
        synthetic.write("ring", 10, tmp_path / "x.log")
    with pytest.raises(ValueError, match="n must be in"):
        synthetic.write("skip", 1, tmp_path / "x.log")
    with pytest.raises(TypeError, match="n must be an integer"):
        synthetic.write("chain", 2.0, tmp_path / "x.log")
    assert not (tmp_path / "x.log").exists()


def test_deep_chain_thrashes_under_a_cap(chain):
    r = dtrlab.simulate(chain, budget=158 + 200, cap=1.5, heuristic="LRU")
    assert r.status == "thrashed"
    assert r.remat_compute > (N_CHAIN + 1) * 0.5


def test_engine_panic_becomes_an_exception():
    with pytest.raises(dtrlab.EngineError, match="internal engine error"):
        _engine._panic_for_test()
    # The interpreter and the engine are still usable afterwards.
    assert "DTR" in [name for name, *_ in _engine.heuristic_catalogue()]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(ratio=0.5, heuristic="Nope"), "unknown heuristic"),
        (dict(ratio=-1.0), "ratio must be"),
        (dict(ratio=float("nan")), "ratio must be"),
        (dict(), "exactly one of budget"),
        (dict(budget=10, ratio=0.5), "exactly one of budget"),
        (dict(budget=10, retain=[10**9]), "not a storage id"),
        (dict(budget=10, engine="other"), "unknown engine"),
        (dict(budget=-5), r"budget must be in \[0, "),
        (dict(budget=2**64), r"budget must be in \[0, "),
        (dict(ratio=0.0), "ratio must be > 0"),
        (dict(ratio=float("inf")), "ratio must be a finite number"),
        (dict(ratio=10**400), "ratio must be a finite number"),
        (dict(ratio=0.5, cap=10**400), "cap must be a finite number"),
        (dict(ratio=0.5, cap=0), "cap must be > 1"),
        (dict(ratio=0.5, cap=-1), "cap must be > 1"),
        (dict(ratio=0.5, cap=0.5), "cap must be > 1"),
        (dict(ratio=0.5, cap=1), "cap must be > 1"),
        (dict(ratio=0.5, cap=float("nan")), "cap must be a finite number"),
        (dict(ratio=0.5, seed=-1), r"seed must be in \[0, "),
        (dict(ratio=0.5, retain=[-1]), r"retain item must be in \[0, 4294967295\]"),
        (dict(ratio=0.5, retain=[2**32]), r"retain item must be in"),
        (dict(ratio=0.5, memory_limit=0), r"memory_limit must be in \[1, "),
        (dict(ratio=0.5, memory_limit=2**64), r"memory_limit must be in \[1, "),
    ],
)
def test_bad_arguments_are_value_errors(kwargs, message, load):
    with pytest.raises(ValueError, match=message):
        dtrlab.simulate(load("unet"), **kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(ratio=0.5, retain="123"), "retain must be a list of storage ids, not str"),
        (dict(ratio=0.5, retain=5), "retain must be a list of storage ids, not int"),
        (dict(ratio=0.5, retain=[1.5]), "retain item must be an integer, not float"),
        (dict(ratio=0.5, seed=1.7), "seed must be an integer, not float"),
        (dict(ratio=0.5, seed=True), "seed must be an integer, not bool"),
        (dict(budget=10.0), "budget must be an integer, not float"),
        (dict(ratio="0.5"), "ratio must be a number, not str"),
        (dict(ratio=0.5, cap="60"), "cap must be a number, not str"),
        (dict(ratio=0.5, events=1), "events must be True or False"),
        (dict(ratio=0.5, memory_limit=1e9), "memory_limit must be an integer, not float"),
    ],
)
def test_arguments_of_the_wrong_type_are_type_errors(kwargs, message, load):
    with pytest.raises(TypeError, match=message):
        dtrlab.simulate(load("unet"), **kwargs)


@pytest.mark.parametrize("method", ["tensor_name", "storage_of", "storage_size", "op_name_of"])
@pytest.mark.parametrize("index, error", [(-1, ValueError), (2**32, ValueError), (10**9, ValueError),
                                          (1.0, TypeError), ("3", TypeError)])
def test_a_trace_lookup_out_of_range_is_a_clear_error(method, index, error, load):
    """Never an OverflowError from the binding's unsigned conversion."""
    with pytest.raises(error) as info:
        getattr(load("unet"), method)(index)
    assert not isinstance(info.value, OverflowError)


def test_a_replay_stops_at_its_memory_limit_with_engine_error(load):
    trace = load("treelstm")
    with pytest.raises(dtrlab.EngineError, match="past its memory limit of 5000000 bytes"):
        dtrlab.simulate(trace, ratio=0.10, events=True, memory_limit=5_000_000)
    # The process lives on, and the same replay under enough memory finishes.
    assert dtrlab.simulate(trace, ratio=0.10, events=True).evictions == 269_875


def test_a_parse_stops_at_its_memory_limit_with_engine_error(load):
    path = load("lstm").path
    with pytest.raises(dtrlab.EngineError, match="past its memory limit of 1000000 bytes"):
        dtrlab.load_trace(path, memory_limit=1_000_000)
    assert dtrlab.load_trace(path).n_ops == load("lstm").n_ops  # the process lives on


@pytest.mark.parametrize("limit, error", [(0, ValueError), (-5, ValueError), (1.5, TypeError), ("9", TypeError)])
def test_bad_parse_memory_limits(limit, error, load):
    with pytest.raises(error, match="memory_limit must be"):
        dtrlab.load_trace(load("unet").path, memory_limit=limit)


# Run in a fresh interpreter whose address space has little room left: the
# event log outgrows it. Without the engine's limit the allocation is refused
# and the interpreter aborts (or hangs in the abort handler).
ADDRESS_SPACE_CHILD = r"""
import resource, sys
import dtrlab
trace = dtrlab.load_trace(sys.argv[1])
size = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize:")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + (64 << 20), resource.RLIM_INFINITY))
try:
    dtrlab.simulate(trace, ratio=0.10, events=True)
    print("finished")
except dtrlab.EngineError as e:
    print("EngineError:", e)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the limits from /proc")
def test_a_tight_address_space_gives_engine_error_not_an_abort(load):
    trace = load("treelstm")
    child = subprocess.run([sys.executable, "-c", ADDRESS_SPACE_CHILD, str(trace.path)],
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.startswith("EngineError: the engine holds"), child.stdout + child.stderr[-2000:]
    assert "past its memory limit" in child.stdout


# The same for the parser: room for the file's bytes and 256 MiB beyond them,
# about half of what the parsed trace needs (the decoding threads' malloc
# arenas take their share of the address space too).
PARSE_ADDRESS_SPACE_CHILD = r"""
import os, resource, sys
import dtrlab
size = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize:")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + os.path.getsize(sys.argv[1]) + (256 << 20), resource.RLIM_INFINITY))
try:
    dtrlab.load_trace(sys.argv[1])
    print("finished")
except dtrlab.EngineError as e:
    print("EngineError:", e)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the limits from /proc")
def test_a_tight_address_space_stops_the_parser_with_engine_error(tmp_path):
    path = _chain_file(tmp_path, 1_000_000)
    child = subprocess.run([sys.executable, "-c", PARSE_ADDRESS_SPACE_CHILD, str(path)],
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.startswith("EngineError: the engine holds"), child.stdout + child.stderr[-2000:]


def test_a_cap_of_infinity_is_no_cap(load):
    trace = load("resnet32")
    assert dtrlab.simulate(trace, ratio=0.2, cap=float("inf")).to_dict() == \
        {**dtrlab.simulate(trace, ratio=0.2, cap=None).to_dict(), "cap": float("inf")}


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(grid=0), ValueError, r"grid must be in \[2, "),
        (dict(grid=-3), ValueError, r"grid must be in \[2, "),
        (dict(max_work=-1), ValueError, "max_work must be > 0"),
        (dict(max_runs=0), ValueError, r"max_runs must be in \[1, "),
        (dict(edge_runs=-1), ValueError, r"edge_runs must be in \[0, "),
        (dict(time_limit=0), ValueError, "time_limit must be > 0"),
        (dict(cap=0.5), ValueError, "cap must be > 1"),
        (dict(grid=2.5), TypeError, "grid must be an integer"),
    ],
)
def test_bad_atlas_arguments(kwargs, error, message, load):
    from dtrlab import atlas

    with pytest.raises(error, match=message):
        atlas.build(load("unet"), 100, 200, **kwargs)
