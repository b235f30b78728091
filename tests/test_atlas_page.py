"""The atlas page (dtrlab.report.atlas_page): built from real atlases, and
driven in a real headless Chromium (Debian's chromium and chromium-driver,
which the set-up installs): it loads with no console error and no network
request, every trace draws, and a scripted zoom onto a 128-byte ResNet-32
hole shows its two byte edges."""

from __future__ import annotations

import io
import json
import re
import shutil

import pytest

from dtrlab import atlas, engine
from dtrlab.report import atlas_page

#: The first 128-byte hole above ResNet-32's OOM band (docs/ATLAS.md).
MICRO_HOLE = (1_069_692_896, 1_069_693_023)


@pytest.fixture(scope="module")
def atlases(load):
    """ResNet-32 walked exactly over the OOM band and its micro-holes; U-Net
    over its whole axis with a small run limit, so that it is partly sampled."""
    out = []
    r = load("resnet32")
    peak = engine.baseline(r).peak
    a = atlas.build(r, engine.budget_for_ratio(peak, 0.100), engine.budget_for_ratio(peak, 0.108),
                    max_runs=None, walk_ops=None, walk_share=1.0, max_total_runs=None,
                    max_work=None)
    out.append(a)
    u = load("unet")
    out.append(atlas.build(u, 0, engine.baseline(u).peak, max_runs=40, max_total_runs=80, grid=16))
    return out


@pytest.fixture(scope="module")
def page_file(atlases, tmp_path_factory):
    traces = [atlas_page.trace_data(a, atlas.holes_table(a)) for a in atlases]
    path = tmp_path_factory.mktemp("atlas-page") / "index.html"
    path.write_text(atlas_page.page(traces, "atlas test", atlas_page.plotly_js()))
    return path


def embedded(html: str) -> dict:
    return json.loads(re.search(r'<script id="atlas-data" type="application/json">(.*?)</script>', html, re.S)
                      .group(1).replace("<\\/", "</"))


def test_classes_cover_the_axis_with_gaps_marked_unresolved(atlases):
    a = atlases[1]
    d = atlas_page.trace_data(a, atlas.holes_table(a))
    cs = d["classes"]
    assert cs[0][0] == a.lo_budget and cs[-1][1] == a.hi_budget
    assert all(n[0] == c[1] + 1 for c, n in zip(cs, cs[1:])), "classes must tile the axis"
    assert {c[2] for c in cs} <= {"ok", "oom", "thrashed", "unresolved"}
    assert not all(c[4] for c in cs), "the U-Net axis under a small run limit is partly sampled"
    covered = sum(c.hi - c.lo + 1 for c in a.classes)
    gaps = sum(c[1] - c[0] + 1 for c in cs if c[2] == "unresolved")
    assert covered + gaps == a.hi_budget - a.lo_budget + 1


def test_the_page_is_self_contained_and_deterministic(atlases, page_file):
    html = page_file.read_text()
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", html), "the page must load nothing"
    again = atlas_page.page([atlas_page.trace_data(a, atlas.holes_table(a)) for a in atlases], "atlas test",
                            atlas_page.plotly_js())
    assert again == html
    data = embedded(html)
    assert [t["key"] for t in data["traces"]] == ["resnet32", "unet"]
    holes = {(h["lo"], h["hi"]) for h in data["traces"][0]["holes"]}
    assert MICRO_HOLE in holes
    for t in data["traces"]:
        for h in t["holes"]:
            assert f'id="hole-{t["key"]}-{h["k"]}"' in html


def test_a_script_end_tag_in_a_title_cannot_break_out(atlases):
    html = atlas_page.page([], "</script><b>x", "/* js */")
    assert "</script><b>" not in html


# --- in a real browser ------------------------------------------------------

def browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")
    if not (chromium and driver):
        pytest.skip("no chromium/chromedriver (scripts/setup-system.sh installs them)")
    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(arg)
    opts.binary_location = chromium
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=opts)


@pytest.fixture(scope="module")
def opened(page_file):
    d = browser()
    try:
        d.get(page_file.as_uri())
        d.execute_async_script(WAIT_DRAWN)
        yield d
    finally:
        d.quit()


#: Resolves once every trace has been drawn (plotly renders asynchronously).
WAIT_DRAWN = """
const done = arguments[arguments.length - 1];
const ready = () => window.dtrlabAtlas && window.dtrlabAtlas.traces.every((k) => window.dtrlabAtlas.drawn(k));
const poll = () => ready() ? done(true) : setTimeout(poll, 50);
poll();
"""


def requests_made(d) -> list[str]:
    msgs = [json.loads(e["message"])["message"] for e in d.get_log("performance")]
    return [m["params"]["request"]["url"] for m in msgs if m["method"] == "Network.requestWillBeSent"]


def colours(png: bytes) -> dict[tuple, int]:
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    return dict((c, n) for n, c in img.getcolors(img.width * img.height))


def hex_rgb(h: str) -> tuple:
    return tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))


def test_the_page_loads_with_no_console_error_and_no_request(opened, page_file):
    errors = [e for e in opened.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert not errors, errors
    assert requests_made(opened) == [page_file.as_uri()]


def test_every_trace_draws(opened):
    for key in ("resnet32", "unet"):
        el = opened.find_element("id", f"plot-{key}")
        opened.execute_script("arguments[0].scrollIntoView()", el)
        cs = colours(el.screenshot_as_png)
        total = sum(cs.values())
        white = cs.get((255, 255, 255), 0)
        assert total - white > 0.05 * total, f"{key}: the plot is blank"
        assert cs.get(hex_rgb(atlas_page.PALETTE["ok"]), 0) > 0.01 * total, f"{key}: no ok class drawn"
        assert opened.execute_script(f"return window.dtrlabAtlas.drawn('{key}').length") > 1


def test_zooming_onto_a_128_byte_hole_shows_its_edges(opened):
    lo, hi = MICRO_HOLE
    opened.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        f"window.dtrlabAtlas.zoom('resnet32', {lo - 400}, {hi + 1 + 400}).then(() => done(true));")
    drawn = opened.execute_script("return window.dtrlabAtlas.drawn('resnet32')")
    failing = [b for b in drawn if b["status"] == "oom"]
    assert min(b["lo"] for b in failing) == lo and max(b["hi"] for b in failing) == hi
    assert all(b["n"] == 1 for b in drawn), "at this zoom every class is drawn alone"
    below = next(b for b in drawn if b["hi"] == lo - 1)
    above = next(b for b in drawn if b["lo"] == hi + 1)
    assert below["status"] == above["status"] == "ok"
    el = opened.find_element("id", "plot-resnet32")
    opened.execute_script("arguments[0].scrollIntoView()", el)
    cs = colours(el.screenshot_as_png)
    assert cs.get(hex_rgb(atlas_page.PALETTE["oom"]), 0) > 500 and cs.get(hex_rgb(atlas_page.PALETTE["ok"]), 0) > 500


def test_the_whole_axis_is_decimated_and_a_hole_row_zooms(opened):
    opened.execute_script("document.querySelector('a.reset[data-trace=\"resnet32\"]').click()")
    opened.execute_async_script(WAIT_DRAWN)
    whole = opened.execute_script("return window.dtrlabAtlas.drawn('resnet32')")
    classes = opened.execute_script(
        "return JSON.parse(document.getElementById('atlas-data').textContent).traces[0].classes.length")
    assert len(whole) < classes and any(b["n"] > 1 for b in whole), "narrow classes must be merged"
    lo, hi = MICRO_HOLE
    row = opened.find_element("css selector", f'a.zoom[data-trace="resnet32"][data-lo="{lo}"]')
    opened.execute_script("arguments[0].click()", row)
    x0, x1 = opened.execute_script("return window.dtrlabAtlas.range('resnet32')")
    assert x0 < lo and x1 > hi + 1 and x1 - x0 < 10_000


def test_the_workflow_builds_both_atlas_pages(run):
    for folder in ("atlas", "atlas-captured"):
        html = (run / "results" / folder / "index.html").read_text()
        keys = [t["key"] for t in embedded(html)["traces"]]
        assert keys, folder
        summary = json.loads((run / "results" / "MANIFEST.json").read_text())
        paths = [a["path"] for a in summary["artifacts"]] if isinstance(summary["artifacts"], list) \
            else list(summary["artifacts"])
        assert f"results/{folder}/index.html" in paths


def test_clicking_a_hole_leads_to_its_forensics_row(opened):
    """A hole's triangle, clicked (plotly's own click event on the drawn
    point), takes the page to that hole's row of the forensics table."""
    opened.execute_script("document.querySelector('a.reset[data-trace=\"resnet32\"]').click()")
    opened.execute_async_script(WAIT_DRAWN)
    k = opened.execute_script("""
        const div = document.getElementById('plot-resnet32');
        const i = div.data.findIndex((d) => d.name === 'holes');
        const point = {data: div.data[i], curveNumber: i, pointNumber: 0, customdata: div.data[i].customdata[0]};
        div.emit('plotly_click', {points: [point]});
        return div.data[i].customdata[0][0];""")
    assert opened.execute_script("return location.hash") == f"#hole-resnet32-{k}"
    row = opened.find_element("id", f"hole-resnet32-{k}")
    assert row.is_displayed() and opened.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return r.top >= 0 && r.top < window.innerHeight", row)
