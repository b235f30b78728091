"""Rules of the feasibility atlas: chunks of a trace's budget axis, merged
per trace (with hole forensics), then one figure and one holes table."""

from __future__ import annotations

import sys

from dtrlab import atlas, engine
from dtrlab.atomic import write_text
from dtrlab.steps import Step, step
from dtrlab.steps.io import read_json, write_csv, write_json, write_table

#: Columns of a holes table (also when there is no hole).
HOLE_COLUMNS = ["trace", "heuristic", "lo", "hi", "bytes_wide", "lo_ratio", "hi_ratio", "below_ok_budget",
                "above_ok_budget", "statuses", "exact"]


@step()
def atlas_chunk(s: Step) -> None:
    """One chunk of a trace's budget range, mapped into execution classes."""
    p = s.params
    t = s.trace()
    peak = engine.baseline(t).peak
    lo_b, hi_b = atlas.chunk_range(engine.budget_for_ratio(peak, p.lo), engine.budget_for_ratio(peak, p.hi),
                                   p.chunk, p.chunks)
    a = atlas.build(t, lo_b, hi_b, heuristic=p.heuristic, cap=p.cap, max_runs=p.max_runs, walk_ops=p.walk_ops,
                    walk_share=p.walk_share, time_limit=p.time_limit,
                    grid=p.grid, max_total_runs=p.max_total_runs, edge_runs=p.edge_runs, max_work=p.max_work,
                    resolve=p.resolve, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(f"{a.runs} runs, work {a.work:.1f}, {len(a.classes)} classes, {len(a.holes())} holes", file=sys.stderr)
    write_json(s.output.chunk, a.to_dict())


@step()
def atlas_trace(s: Step) -> None:
    """A trace's chunks merged: the atlas (with each hole's forensics, if
    asked), its classes and its holes as tables."""
    import pandas as pd  # here, not above: the chunk jobs start without it
    t = s.trace()
    a = atlas.combine([atlas.from_dict(read_json(p)) for p in s.input.chunks])
    fx = [atlas.hole_forensics(t, a, h) for h in a.holes()] if s.params.forensics else None
    doc = a.to_dict()
    doc["forensics"] = fx
    write_json(s.output.atlas, doc)
    classes = pd.DataFrame([{**{k: v for k, v in c.items() if k != "interval"}, "trace": a.trace,
                             "heuristic": a.heuristic} for c in doc["classes"]])
    classes["lo_ratio"] = classes.lo / a.peak
    classes["hi_ratio"] = classes.hi / a.peak
    write_table(classes, s.output.classes, s.output.classes_csv)
    holes = pd.DataFrame(atlas.holes_table(a, fx)) if a.holes() else pd.DataFrame(columns=HOLE_COLUMNS)
    write_table(holes, s.output.holes, s.output.holes_csv)


@step()
def atlas_report(s: Step) -> None:
    """Every trace's atlas in one figure (PDF, PNG) and one holes table (CSV, LaTeX)."""
    import pandas as pd

    from dtrlab.report import figures, tables

    atlases = [(atlas.from_dict(d), d) for d in map(read_json, s.input.atlases)]
    figures.atlas_figure([a for a, _ in atlases], s.output.pdf, s.output.png)
    rows = [row for a, d in atlases for row in atlas.holes_table(a, d.get("forensics"))]
    df = pd.DataFrame(rows, columns=None if rows else HOLE_COLUMNS)
    with_fx = [c for c in ("retention_removes_oom",) if c in df.columns]
    write_csv(df, s.output.holes)
    write_text(s.output.tex, tables.holes(df, with_fx))


@step()
def atlas_page(s: Step) -> None:
    """Every trace's atlas as one self-contained page to explore in a browser."""
    from dtrlab.report import atlas_page as page

    traces = []
    for d in map(read_json, s.input.atlases):
        a = atlas.from_dict(d)
        traces.append(page.trace_data(a, atlas.holes_table(a, d.get("forensics"))))
    html = page.page(traces, s.params.title, page.plotly_js())
    print(f"{len(traces)} traces, {sum(len(t['classes']) for t in traces)} classes, "
          f"{sum(len(t['holes']) for t in traces)} holes, {len(html):,} bytes", file=sys.stderr)
    write_text(s.output.html, html)
