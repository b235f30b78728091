"""A hypothesis strategy for valid DTR traces (within the reference's domain):
constants, tuple outputs, views of single-argument operators, duplicate
arguments, zero sizes and costs, MUTATE of argument 0, COPY, COPY_FROM,
RELEASE, a BACKWARD marker, and names still live at the end."""

from __future__ import annotations

import json

from hypothesis import strategies as st


def _line(**fields) -> str:
    return json.dumps(fields, sort_keys=True)


@st.composite
def traces(draw, max_ops: int = 40) -> str:
    lines = [_line(INSTRUCTION="ANNOTATE", ANNOTATION="START")]
    counter = 0
    mapped: dict[str, int] = {}  # name -> tensor
    live: list[str] = []  # names holding a reference
    mutated: set[int] = set()
    tensor_names: dict[int, str] = {}
    n_tensors = 0

    def new_name() -> str:
        nonlocal counter
        counter += 1
        return f"t{counter}"

    def new_tensor(name: str) -> int:
        nonlocal n_tensors
        n_tensors += 1
        tensor_names[n_tensors] = name
        return n_tensors

    size = st.one_of(st.just(0), st.integers(1, 64), st.integers(1000, 5000))
    for _ in range(draw(st.integers(2, 4))):
        name = new_name()
        lines.append(_line(INSTRUCTION="CONSTANT", NAME=name))
        lines.append(_line(INSTRUCTION="MEMORY", NAME=name, MEMORY=str(draw(size))))
        mapped[name] = new_tensor(name)
        live.append(name)

    for step in range(draw(st.integers(1, max_ops))):
        kind = draw(st.sampled_from(["call", "call", "call", "view", "mutate", "copy", "copy_from", "release", "release"]))
        if kind == "call":
            args = draw(st.lists(st.sampled_from(sorted(mapped)), min_size=1, max_size=3))
            outs = [new_name() for _ in range(draw(st.integers(1, 3)))]
            op = "backward_op" if draw(st.booleans()) and step > 5 else "op"
            lines.append(_line(INSTRUCTION="CALL", NAME=op, ARGS=args, RESULT=outs, TIME=draw(st.integers(0, 100))))
            for o in outs:
                lines.append(_line(INSTRUCTION="MEMORY", NAME=o, MEMORY=str(draw(size))))
                lines.append(_line(INSTRUCTION="ALIAS", NAME=o, ALIAS="-1"))
                mapped[o] = new_tensor(o)
                live.append(o)
        elif kind == "view":
            arg = draw(st.sampled_from(sorted(mapped)))
            outs = [new_name() for _ in range(draw(st.integers(1, 2)))]
            lines.append(_line(INSTRUCTION="CALL", NAME="view", ARGS=[arg], RESULT=outs, TIME=draw(st.integers(0, 5))))
            for o in outs:
                lines.append(_line(INSTRUCTION="MEMORY", NAME=o, MEMORY="0"))
                lines.append(_line(INSTRUCTION="ALIAS", NAME=o, ALIAS="0"))
                mapped[o] = new_tensor(o)
                live.append(o)
        elif kind == "mutate":
            candidates = sorted(n for n in live if mapped[n] not in mutated)
            if not candidates:
                continue
            target = draw(st.sampled_from(candidates))
            extra = draw(st.lists(st.sampled_from(sorted(mapped)), max_size=2))
            lines.append(_line(INSTRUCTION="MUTATE", NAME="mut_", ARGS=[target] + extra, MUTATE=[0],
                               TIME=draw(st.integers(0, 50))))
            old = mapped[target]
            mutated.add(old)
            mapped[target] = new_tensor(tensor_names[old] + "$")
        elif kind == "copy":
            if not live:
                continue
            src = draw(st.sampled_from(sorted(live)))
            dst = new_name()
            lines.append(_line(INSTRUCTION="COPY", DST=dst, SRC=src))
            mapped[dst] = mapped[src]
            live.append(dst)
        elif kind == "copy_from":
            if len(live) < 2:
                continue
            dst, src = draw(st.lists(st.sampled_from(sorted(live)), min_size=2, max_size=2, unique=True))
            lines.append(_line(INSTRUCTION="COPY_FROM", DST=dst, SRC=src))
            mapped[dst] = mapped[src]
        elif kind == "release":
            if not live:
                continue
            name = draw(st.sampled_from(sorted(live)))
            lines.append(_line(INSTRUCTION="RELEASE", NAME=name))
            live.remove(name)
        if step == 10:
            lines.append(_line(INSTRUCTION="ANNOTATE", ANNOTATION="BACKWARD"))
    return "\n".join(lines) + "\n"
