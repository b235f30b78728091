"""A short, deterministic slice of the trace fuzzer (tests/fuzz_traces.py):
every mutant is refused with a TraceError naming its file, or loads and
replays cleanly and deterministically under the engine's self-check."""

from __future__ import annotations

import fuzz_traces


def test_a_slice_of_the_fuzzer_finds_nothing():
    stats = fuzz_traces.run(seed=0, iterations=3000)
    assert stats.findings == []
    # Both sides of the contract are exercised: refused and replayed mutants.
    assert stats.refused > 300 and stats.loaded > 300 and stats.replays > 2000


def test_the_fuzzer_is_deterministic():
    a, b = fuzz_traces.run(seed=7, iterations=300), fuzz_traces.run(seed=7, iterations=300)
    assert (a.cases, a.refused, a.loaded, a.replays) == (b.cases, b.refused, b.loaded, b.replays)
