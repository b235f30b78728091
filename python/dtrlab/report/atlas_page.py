"""The atlas as a page to explore in a browser: every trace's whole budget axis
as execution classes coloured by outcome, zoomable from the whole axis down to
a hole's byte edges, with each hole linked to its forensics row.

One self-contained HTML file (plotly.js embedded: no network, opens from disk
on a laptop). Per trace: the overhead of each ok class above; the classes as
a strip below, unresolved bytes white, holes as triangles; under the strip, a
thin row saying which stretches were walked exactly and which sampled. At
any zoom, classes narrower than a pixel are drawn merged (one bar per pixel,
"mixed" when their outcomes differ); zooming in redraws the visible range in
full detail, so a 128-byte hole shows its own two edges.

The page is deterministic (sorted JSON, no dates), so it is hashed in the
manifest like any artifact.
"""

from __future__ import annotations

import html
import json
import math

from dtrlab.report.style import COLORS
from dtrlab.report.tables import TRACE_NAMES

#: Outcome -> colour on the page (unresolved bytes: left white; mixed: merged classes).
PALETTE = {"ok": COLORS["ok"], "oom": COLORS["oom"], "thrashed": COLORS["thrashed"],
           "unresolved": "#FFFFFF", "mixed": COLORS["mixed"]}

#: The forensics columns of a hole row, when the atlas computed them.
FORENSICS = [("first_difference_index", "first difference (eviction #)"), ("ok_eviction", "ok run evicts"),
             ("failing_eviction", "failing run evicts"), ("fail_operator", "failing operator"),
             ("fail_tensor", "tensor"), ("retention_removes_oom", "never evicting its storage removes the OOM")]


def trace_data(atlas, holes: list[dict]) -> dict:
    """What the page draws of one trace: its classes as ``[lo, hi, outcome,
    overhead, exact]`` in byte order, with every unresolved gap as a class of
    its own, and its holes (the rows of :func:`dtrlab.atlas.holes_table`)."""
    classes, at = [], int(atlas.lo_budget)
    for c in sorted(atlas.classes, key=lambda c: c.lo):
        lo, hi = int(c.lo), int(c.hi)
        if lo > at:
            classes.append([at, lo - 1, "unresolved", None, False])
        ov = c.overhead
        ov = None if ov is None or math.isnan(ov) else round(float(ov), 6)
        classes.append([lo, hi, c.status, ov, bool(c.exact)])
        at = hi + 1
    if at <= int(atlas.hi_budget):
        classes.append([at, int(atlas.hi_budget), "unresolved", None, False])
    rows = []
    for k, h in enumerate(holes):
        row = {"k": k, "lo": int(h["lo"]), "hi": int(h["hi"]), "bytes": int(h["bytes_wide"]),
               "lo_ratio": round(float(h["lo_ratio"]), 9), "statuses": h["statuses"], "exact": bool(h["exact"])}
        for col, _ in FORENSICS:
            if col in h and h[col] is not None and not (isinstance(h[col], float) and math.isnan(h[col])):
                v = h[col]
                row[col] = v if isinstance(v, (bool, str)) else int(v) if float(v).is_integer() else float(v)
        rows.append(row)
    return {"key": atlas.trace, "name": TRACE_NAMES.get(atlas.trace, atlas.trace), "heuristic": atlas.heuristic,
            "peak": int(atlas.peak), "lo": int(atlas.lo_budget), "hi": int(atlas.hi_budget),
            "exact_share": round(atlas.exact_share, 4), "classes": classes, "holes": rows}


def _holes_table(t: dict) -> str:
    cols = [("k", "hole"), ("lo", "lowest failing budget (B)"), ("hi", "highest (B)"), ("bytes", "width (B)"),
            ("lo_ratio", "of peak"), ("statuses", "outcome"), ("exact", "found by")]
    cols += [c for c in FORENSICS if any(c[0] in h for h in t["holes"])]
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label in cols) + "<th></th>"
    body = []
    for h in t["holes"]:
        cells = []
        for col, _ in cols:
            v = h.get(col, "")
            if col in ("lo", "hi", "bytes"):
                v = f"{v:,}"
            elif col == "exact":
                v = "exact walk" if v else "sampling (bisected to the byte)"
            elif col == "lo_ratio":
                v = f"{v:.6f}"
            elif isinstance(v, bool):
                v = "yes" if v else "no"
            cells.append(f"<td>{html.escape(str(v))}</td>")
        zoom = (f'<a href="#trace-{t["key"]}" class="zoom" data-trace="{t["key"]}" data-lo="{h["lo"]}" '
                f'data-hi="{h["hi"]}">zoom</a>')
        body.append(f'<tr id="hole-{t["key"]}-{h["k"]}">{"".join(cells)}<td>{zoom}</td></tr>')
    if not body:
        return "<p class='none'>No feasibility hole on this axis.</p>"
    return f"<table class='holes'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def page(traces: list[dict], title: str, plotly_js: str, note: str = "") -> str:
    """The whole page: ``traces`` from :func:`trace_data`, ``plotly_js`` the
    library's script (embedded as is)."""
    sections = []
    for t in traces:
        holes = len(t["holes"])
        summary = (f"{len(t['classes']):,} classes on [{t['lo']:,}, {t['hi']:,}] bytes (peak {t['peak']:,}), "
                   f"{t['exact_share']:.1%} of the bytes walked exactly, {holes} hole{'s' if holes != 1 else ''}")
        sections.append(
            f'<section id="trace-{t["key"]}"><h2>{html.escape(t["name"])} <small>{html.escape(t["heuristic"])}'
            f'</small></h2><p class="summary">{html.escape(summary)}. '
            f'<a href="#" class="reset" data-trace="{t["key"]}">whole axis</a></p>'
            f'<div class="plot" id="plot-{t["key"]}"></div>{_holes_table(t)}</section>')
    nav = " · ".join(f'<a href="#trace-{t["key"]}">{html.escape(t["name"])}</a>' for t in traces)
    data = json.dumps({"traces": traces, "palette": PALETTE}, sort_keys=True, separators=(",", ":"))
    return _TEMPLATE.format(title=html.escape(title), note=note, nav=nav, sections="".join(sections),
                            plotly=plotly_js.replace("</script>", "<\\/script>"),
                            data=data.replace("</", "<\\/"), script=_SCRIPT)


_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; padding: 0 1em; color: #222; }}
h1 {{ font-size: 1.4em; }} h2 {{ font-size: 1.15em; margin-top: 2em; }} h2 small {{ color: #777; font-weight: normal; }}
.plot {{ height: 300px; }} .summary, .note, nav {{ font-size: 0.9em; color: #444; }}
table.holes {{ border-collapse: collapse; font-size: 0.8em; margin-top: 0.5em; }}
table.holes th, table.holes td {{ border-bottom: 1px solid #ddd; padding: 2px 6px; text-align: right; }}
table.holes tr:target {{ background: #fff3b0; }}
</style>
<script>{plotly}</script>
</head><body>
<h1>{title}</h1>
<p class="note">Each trace's budget axis as execution classes: budgets with the very same execution. Drag to zoom
(double-click: the whole axis); hover for a class's byte interval, outcome, overhead and how it was found; click a
hole's triangle for its forensics. The thin row under the outcomes says how each stretch was found: walked
exactly, class by class (dark), or sampled (light: a grid bisected to the byte at every change of outcome); white
outcomes are unresolved. {note}</p>
<nav>{nav}</nav>
{sections}
<script id="atlas-data" type="application/json">{data}</script>
<script>{script}</script>
</body></html>
"""

#: Draws each trace, and redraws the visible range at full detail on zoom.
_SCRIPT = r"""
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("atlas-data").textContent);
  const PAL = DATA.palette;
  const fmt = (v) => Math.round(v).toLocaleString("en-US");
  const state = {};

  // Classes overlapping [x0, x1]; those narrower than a pixel merged, one bar per pixel.
  function bars(t, x0, x1, pixels) {
    const px = Math.max((x1 - x0) / pixels, 1);
    const out = [];
    let run = null;
    const flush = () => { if (run) { out.push(run); run = null; } };
    for (const c of t.classes) {
      if (c[1] < x0 || c[0] > x1) continue;
      const w = c[1] - c[0] + 1;
      const one = {lo: c[0], hi: c[1], status: c[2], overhead: c[3], exact: c[4], n: 1, omin: c[3], omax: c[3]};
      if (w >= px) { flush(); out.push(one); continue; }
      if (run && c[0] - run.lo < px) {
        run.hi = c[1]; run.n += 1; run.exact = run.exact && c[4];
        if (run.status !== c[2]) run.status = "mixed";
        if (c[3] !== null) {
          run.omin = run.omin === null ? c[3] : Math.min(run.omin, c[3]);
          run.omax = run.omax === null ? c[3] : Math.max(run.omax, c[3]);
        }
      } else { flush(); run = one; }
    }
    flush();
    return out;
  }

  function traces(t, x0, x1, pixels) {
    const bs = bars(t, x0, x1, pixels);
    state[t.key].drawn = bs;
    const order = ["ok", "oom", "thrashed", "mixed", "unresolved"];
    const strips = order.map((s) => {
      const b = bs.filter((x) => x.status === s);
      return {type: "bar", orientation: "h", yaxis: "y2", name: s, y: b.map(() => 0), base: b.map((x) => x.lo),
        x: b.map((x) => x.hi - x.lo + 1), width: 0.9, showlegend: b.length > 0,
        marker: {color: PAL[s], line: {width: s === "unresolved" ? 0.5 : 0, color: "#999"}},
        customdata: b.map((x) => [fmt(x.lo), fmt(x.hi), fmt(x.hi - x.lo + 1), x.n,
          x.omin === null ? "–" : x.omin === x.omax ? x.omin.toFixed(4) + "×"
            : x.omin.toFixed(4) + "–" + x.omax.toFixed(4) + "×",
          x.exact ? "exact walk" : "sampled", (x.lo / t.peak).toFixed(6)]),
        hovertemplate: "[%{customdata[0]}, %{customdata[1]}] B (%{customdata[2]} B, from %{customdata[6]} of peak)" +
          "<br>" + s + (s === "mixed" ? " (%{customdata[3]} classes)" : "") +
          "<br>overhead %{customdata[4]}<br>%{customdata[5]}<extra></extra>"};
    });
    // How each stretch was found, as a thin row under the outcomes.
    const runs = [];  // adjacent bars found the same way, as one bar (this row has no hover)
    for (const x of bs) {
      if (x.status === "unresolved") continue;
      const last = runs[runs.length - 1];
      if (last && last.exact === x.exact && last.hi + 1 >= x.lo) last.hi = x.hi;
      else runs.push({lo: x.lo, hi: x.hi, exact: x.exact});
    }
    const how = [[true, "walked exactly", "#444444"], [false, "sampled", "#CCCCCC"]].map(([ex, name, color]) => {
      const b = runs.filter((x) => x.exact === ex);
      return {type: "bar", orientation: "h", yaxis: "y2", name: name, y: b.map(() => -0.72),
        base: b.map((x) => x.lo), x: b.map((x) => x.hi - x.lo + 1), width: 0.22, showlegend: b.length > 0,
        marker: {color: color}, hoverinfo: "skip"};
    });
    // The overhead of ok classes as steps, broken wherever a budget is not
    // ok: one step a drawn bar (ok classes sharing a pixel at their largest
    // overhead; every class on zoom).
    const lx = [], ly = [], lc = [];
    let prev = null;
    for (const b of bs) {
      if (b.status !== "ok" || b.omax === null) {
        if (prev) { lx.push(prev.hi + 1, null); ly.push(prev.omax, null); lc.push(null, null); prev = null; }
        continue;
      }
      lx.push(b.lo); ly.push(b.omax); lc.push([fmt(b.lo), fmt(b.hi)]);
      prev = b;
    }
    if (prev) { lx.push(prev.hi + 1); ly.push(prev.omax); lc.push(null); }
    const line = {type: "scatter", mode: "lines+markers", name: "overhead", yaxis: "y", xaxis: "x",
      line: {shape: "hv", width: 1, color: "#0072B2"}, marker: {size: 3}, connectgaps: false, x: lx, y: ly,
      customdata: lc, hovertemplate: "[%{customdata[0]}, %{customdata[1]}] B<br>overhead %{y:.4f}×<extra></extra>"};
    const holes = {type: "scatter", mode: "markers", name: "holes", yaxis: "y2",
      x: t.holes.map((h) => (h.lo + h.hi) / 2), y: t.holes.map(() => 0.62),
      marker: {symbol: "triangle-down", size: 11, color: "#000"},
      customdata: t.holes.map((h) => [h.k, fmt(h.lo), fmt(h.hi), fmt(h.bytes), h.exact ? "exact walk" : "sampling"]),
      hovertemplate: "hole %{customdata[0]}: [%{customdata[1]}, %{customdata[2]}] B, %{customdata[3]} B wide" +
        "<br>found by %{customdata[4]}<br>click for its forensics<extra></extra>"};
    return [line, ...strips, ...how, holes];
  }

  // Readable ticks on a log axis: 1, 1.5, 2, 3, 5 ... per decade, thinned to at most eight.
  function logTicks(values) {
    const v = values.filter((y) => y !== null && y > 0);
    if (!v.length) return undefined;
    const lo = Math.min(...v), hi = Math.max(...v);
    for (const steps of [[1, 1.2, 1.5, 2, 3, 4, 5, 7], [1, 1.5, 2, 3, 5], [1, 2, 5], [1]]) {
      const ticks = [];
      for (let k = Math.floor(Math.log10(lo)); k <= Math.ceil(Math.log10(hi)); k++)
        for (const m of steps) { const t = m * Math.pow(10, k); if (t >= lo / 1.05 && t <= hi * 1.05) ticks.push(t); }
      if (ticks.length <= 8 || steps.length === 1) return ticks;
    }
  }

  function layout(t, x0, x1, overheads) {
    return {margin: {l: 60, r: 10, t: 10, b: 40}, barmode: "overlay", bargap: 0, hovermode: "closest",
      legend: {orientation: "h", y: 1.12, font: {size: 10}},
      xaxis: {range: [x0, x1], anchor: "y2", title: {text: "budget (bytes)", font: {size: 11}}, tickformat: ",d",
              nticks: 8, showspikes: true, spikemode: "across", spikethickness: 1},
      yaxis: {domain: [0.45, 1], type: "log", tickvals: logTicks(overheads), title: {text: "overhead (×)", font: {size: 11}},
              fixedrange: true},
      yaxis2: {domain: [0, 0.36], range: [-0.9, 0.8], visible: false, fixedrange: true}};
  }

  function draw(t, x0, x1) {
    const div = document.getElementById("plot-" + t.key);
    const pixels = Math.max(div.clientWidth - 70, 200);
    state[t.key].range = [x0, x1];
    const data = traces(t, x0, x1, pixels);
    return Plotly.react(div, data, layout(t, x0, x1, data[0].y),
                        {displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"]});
  }

  function zoom(key, x0, x1) {
    const t = DATA.traces.find((x) => x.key === key);
    return draw(t, Math.max(x0, t.lo), Math.min(x1, t.hi + 1));
  }

  for (const t of DATA.traces) {
    state[t.key] = {};
    const div = document.getElementById("plot-" + t.key);
    draw(t, t.lo, t.hi + 1).then(() => {
      div.on("plotly_relayout", (e) => {
        if (e["xaxis.autorange"]) { draw(t, t.lo, t.hi + 1); return; }
        const x0 = e["xaxis.range[0]"] ?? (e["xaxis.range"] || [])[0];
        const x1 = e["xaxis.range[1]"] ?? (e["xaxis.range"] || [])[1];
        if (x0 !== undefined && x1 !== undefined) zoom(t.key, x0, x1);
      });
      div.on("plotly_click", (e) => {
        const p = e.points[0];
        if (p && p.data.name === "holes") location.hash = "hole-" + t.key + "-" + p.customdata[0];
      });
    });
  }
  document.addEventListener("click", (e) => {
    const a = e.target.closest("a.zoom, a.reset");
    if (!a) return;
    e.preventDefault();
    const key = a.dataset.trace, t = DATA.traces.find((x) => x.key === key);
    if (a.classList.contains("reset")) { draw(t, t.lo, t.hi + 1); return; }
    const lo = Number(a.dataset.lo), hi = Number(a.dataset.hi), pad = Math.max((hi - lo + 1) * 3, 256);
    zoom(key, lo - pad, hi + 1 + pad);
    document.getElementById("trace-" + key).scrollIntoView();
  });
  // For scripted use (and the browser test): zoom, and what is drawn now.
  window.dtrlabAtlas = {zoom: zoom, drawn: (key) => state[key].drawn, range: (key) => state[key].range,
                        traces: DATA.traces.map((t) => t.key)};
})();
"""


def plotly_js() -> str:
    """plotly.js as the installed plotly package ships it."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()
