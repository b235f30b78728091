"""A mutation fuzzer of the trace parser and the engine, deterministic for a seed.

Valid traces (drawn from ``tracegen.traces`` with a derandomized hypothesis
run) are mutated the ways a file goes bad — truncation, bit flips, inserted
and deleted bytes and lines, CRLF, non-UTF-8 bytes, garbage lines, huge,
negative, fractional, NaN and infinite numbers, undefined names, empty output
lists, very long lines — and each mutant must either be refused with a
``TraceError`` that names the file (and the line, where one is at fault), or
load and replay cleanly: at four budgets and two heuristics with the engine's
self-check on, every replay finishes or reports oom/thrashed, and a second
replay gives the same result. Anything else (another exception, a panic
surfacing as ``EngineError``, a self-check failure, a difference between two
replays) is a finding; an abort would end the process.

    python tests/fuzz_traces.py --seconds 3600 --seed 1   # a campaign
    python tests/fuzz_traces.py --iterations 200          # a quick slice

The test suite runs a short slice (tests/test_fuzz.py).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import dtrlab

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tracegen  # noqa: E402

NUMBERS = ["0", "-1", "-9223372036854775809", "18446744073709551616", "1e309", "NaN", "Infinity", "-Infinity",
           "1.5", "\"\"", "null", "true", "[]", "{}", "\"12a\"", "340282366920938463463374607431768211456"]


def seed_traces(n: int) -> list[str]:
    """``n`` valid traces, the same ones on every run."""
    from hypothesis import HealthCheck, given, settings

    out: list[str] = []

    @settings(derandomize=True, max_examples=n, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(tracegen.traces(max_ops=30))
    def collect(text):
        out.append(text)

    collect()
    return out


def mutate(text: str, rng: random.Random) -> bytes:
    """Often one change that keeps the trace well formed (so that the
    engine, not only the parser, meets odd traces), else one to three
    mutations of any kind."""
    data = text.encode()
    if rng.random() < 0.4:
        return WELL_FORMED[rng.randrange(len(WELL_FORMED))](data, rng)
    for _ in range(rng.randint(1, 3)):
        data = MUTATIONS[rng.randrange(len(MUTATIONS))](data, rng)
    return data


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _truncate(data, rng):
    return data[: rng.randrange(len(data) + 1)]


def _flip_bit(data, rng):
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]


def _insert_byte(data, rng):
    i = rng.randrange(len(data) + 1)
    return data[:i] + bytes([rng.choice([0, 0x80, 0xFF, ord("{"), ord('"'), ord(","), ord("\n"), ord("9")])]) + data[i:]


def _delete_bytes(data, rng):
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + data[i + rng.randint(1, 8):]


def _delete_line(data, rng):
    lines = _lines(data)
    del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def _duplicate_line(data, rng):
    lines = _lines(data)
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return b"\n".join(lines)


def _swap_lines(data, rng):
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def _crlf(data, rng):
    return data.replace(b"\n", b"\r\n")


def _non_utf8(data, rng):
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]) + data[i:]


def _garbage_line(data, rng):
    lines = _lines(data)
    junk = rng.choice([b"garbage", b"{}", b"[]", b"null", b'{"INSTRUCTION":"FROB"}', b'{"INSTRUCTION":1}',
                       b'{"INSTRUCTION":"RELEASE","NAME":"t1"}', b'{"INSTRUCTION":"CALL"}', b"\t", b" "])
    lines.insert(rng.randrange(len(lines) + 1), junk)
    return b"\n".join(lines)


def _number(data, rng):
    """Replace one number (quoted or not) with an odd value."""
    spots = [m.span() for m in re.finditer(rb'"?-?\d+"?', data)]
    if not spots:
        return data
    a, b = rng.choice(spots)
    value = rng.choice(NUMBERS)
    if rng.random() < 0.5 and not value.startswith('"'):
        value = f'"{value}"'
    return data[:a] + value.encode() + data[b:]


def _undefined_name(data, rng):
    spots = [m.span() for m in re.finditer(rb'"t\d+"', data)]
    if not spots:
        return data
    a, b = rng.choice(spots)
    return data[:a] + rng.choice([b'"nope"', b'"t999999"', b'""', b"1", b"null"]) + data[b:]


def _empty_outputs(data, rng):
    key = rng.choice([rb'"RESULT": \[[^\]]*\]', rb'"MUTATE": \[[^\]]*\]', rb'"ARGS": \[[^\]]*\]'])
    spots = [m.span() for m in re.finditer(key, data)]
    if not spots:
        return data
    a, b = rng.choice(spots)
    return data[:a] + data[a:b].split(b":")[0] + b": []" + data[b:]


def _long_line(data, rng):
    lines = _lines(data)
    i = rng.randrange(len(lines))
    lines[i] = lines[i].replace(b'"t', b'"' + b"x" * rng.choice([1000, 100_000]) + b"t", 1)
    return b"\n".join(lines)


def _field(key: bytes, values, quoted: bool):
    def change(data, rng):
        spots = [m.span(1) for m in re.finditer(rb'"' + key + rb'": ("?\d+"?)', data)]
        if not spots:
            return data
        a, b = rng.choice(spots)
        v = str(rng.choice(values)).encode()
        return data[:a] + (b'"' + v + b'"' if quoted else v) + data[b:]
    return change


def _drop_release(data, rng):
    lines = _lines(data)
    spots = [i for i, line in enumerate(lines) if b'"RELEASE"' in line]
    if spots:
        del lines[rng.choice(spots)]
    return b"\n".join(lines)


# Changes a well-formed trace survives: sizes and costs from 0 to huge, a
# release fewer, a line moved (often still valid).
WELL_FORMED = [_field(b"MEMORY", [0, 1, 7, 2**20, 2**40, 2**62], True),
               _field(b"TIME", [0, 1, 3, 2**30, 2**50], False),
               _drop_release, _swap_lines, _duplicate_line]

MUTATIONS = [_truncate, _flip_bit, _insert_byte, _delete_bytes, _delete_line, _duplicate_line, _swap_lines, _crlf,
             _non_utf8, _garbage_line, _number, _number, _undefined_name, _empty_outputs, _long_line]


@dataclass
class Stats:
    cases: int = 0
    refused: int = 0
    loaded: int = 0
    replays: int = 0
    findings: list[dict] = field(default_factory=list)


def check(data: bytes, path: Path, stats: Stats) -> None:
    """Load and replay one mutant; record anything other than the contract."""
    stats.cases += 1
    path.write_bytes(data)

    def finding(kind: str, detail: str) -> None:
        stats.findings.append({"kind": kind, "detail": detail[:500], "trace": data.decode("utf-8", "replace")[:4000]})

    try:
        trace = dtrlab.load_trace(path)
    except dtrlab.TraceError as e:
        stats.refused += 1
        if not str(e).startswith(f"{path.name}:"):
            finding("error without the file name", str(e))
        return
    except Exception as e:  # noqa: BLE001 - anything else is what we look for
        finding(f"load raised {type(e).__name__}", str(e))
        return
    stats.loaded += 1
    try:
        peak = dtrlab.baseline(trace).peak
    except Exception as e:  # noqa: BLE001
        finding(f"baseline raised {type(e).__name__}", str(e))
        return
    for budget in sorted({0, peak // 3, (2 * peak) // 3, peak}):
        for heuristic in ("DTR", "LRU"):
            kw = dict(budget=budget, heuristic=heuristic, cap=3.0, self_check=True)
            try:
                first = dtrlab.simulate(trace, **kw).to_dict()
                again = dtrlab.simulate(trace, **kw).to_dict()
            except Exception as e:  # noqa: BLE001
                finding(f"simulate raised {type(e).__name__}", f"{kw}: {e}")
                continue
            stats.replays += 2
            if first["status"] not in ("ok", "oom", "thrashed"):
                finding("unknown status", f"{kw}: {first['status']}")
            if first != again:
                finding("nondeterministic", f"{kw}")


def run(seed: int = 0, iterations: int | None = None, seconds: float | None = None, seeds: int = 60,
        progress: bool = False) -> Stats:
    """Fuzz until ``iterations`` mutants or ``seconds`` have passed (whichever first)."""
    rng = random.Random(seed)
    corpus = seed_traces(seeds)
    stats = Stats()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dtrlab-fuzz-") as tmp:
        path = Path(tmp) / "mutant.log"
        while True:
            if iterations is not None and stats.cases >= iterations:
                break
            if seconds is not None and time.monotonic() - start >= seconds:
                break
            check(mutate(rng.choice(corpus), rng), path, stats)
            if progress and stats.cases % 1000 == 0:
                print(f"[fuzz] {stats.cases} cases, {stats.refused} refused, {stats.loaded} loaded, "
                      f"{stats.replays} replays, {len(stats.findings)} findings, "
                      f"{time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    return stats


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--out", default=None, help="write the statistics and findings here (JSON)")
    args = ap.parse_args()
    if args.iterations is None and args.seconds is None:
        ap.error("give --iterations or --seconds")
    stats = run(args.seed, args.iterations, args.seconds, progress=True)
    summary = {"seed": args.seed, "cases": stats.cases, "refused": stats.refused, "loaded": stats.loaded,
               "replays": stats.replays, "findings": stats.findings}
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "findings"} | {"findings": len(stats.findings)}))
    for f in stats.findings[:20]:
        print(f"{f['kind']}: {f['detail']}", file=sys.stderr)
    return 1 if stats.findings else 0


if __name__ == "__main__":
    sys.exit(main())
