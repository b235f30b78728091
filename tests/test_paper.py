"""The paper: every \\input/\\includegraphics is a generated file with one
producing rule, every macro the text uses is generated, no number in the
prose is typed by hand, figure targets build alone, and the compiled PDF
carries the computed numbers."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from conftest import write_reduced_config
from dtrlab import provenance, traces
from dtrlab.report import macros, paper, tables
from test_workflow import rule_blocks, snakemake

REPO = Path(__file__).resolve().parents[1]
MAIN = (REPO / "paper/main.tex").read_text()


def body(tex: str) -> str:
    """The document body without comments."""
    return paper.strip_comments(tex.split(r"\begin{document}")[1].split(r"\end{document}")[0])


def test_main_tex_reads_exactly_the_layout_and_every_figure_names_its_rule():
    """LAYOUT is the paper's layout, written once: main.tex reads its files
    and no other, every figure goes through \\figurefrom (which prints the
    rule LAYOUT names), and each rule named exists."""
    refs = paper.references(MAIN)
    assert sorted(name for _, name in refs) == sorted(paper.LAYOUT), "main.tex and LAYOUT disagree"
    assert {kind for kind, name in refs if name.startswith("figures/")} == {"figurefrom"}
    # (That each rule makes its file: test_each_generated_file_is_produced_by_the_rule_layout_names.)
    blocks = rule_blocks()
    assert all(g.rule in blocks for g in paper.LAYOUT.values())
    build = paper.build_info("v1")
    assert build.count("dtrlab@rule@figures/") == sum(n.startswith("figures/") for n in paper.LAYOUT)
    assert "\\csname dtrlab@rule@figures/atlas\\endcsname{\\detokenize{atlas_report}}" in build


def test_prose_has_no_hand_typed_numbers():
    text = body(MAIN)
    text = re.sub(r"\\(label|ref|cite[pt]?|input|includegraphics|resizebox)(\[[^\]]*\])?\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)  # float placement and optional arguments
    # A digit not inside a name (C1, ResNet-32, x7977) is a typed number.
    numbers = re.findall(r"(?<![A-Za-z\d\-])\d[\d.,]*", text)
    assert numbers == [], f"numbers typed in the prose: {numbers}"


def test_macros_render_and_parse_back():
    m = {"LstmFastOverhead": "1.38", "EvictionsFast": "6,958"}
    assert macros.defined(macros.render(m)) == set(m)


def test_forensics_without_a_failure_is_reported_not_invented():
    ok = {"0.101": {"status": "ok", "budget": 1, "peak_pinned": 1, "depth_at_peak_pinned": 1, "max_nesting_depth": 1}}
    with pytest.raises(macros.MissingResult, match="no forensics budget failed"):
        macros.forensics(ok)


def test_the_comparison_says_what_each_group_shows_and_what_the_atlas_missed():
    import pandas as pd

    base = {"captured": False, "smallest_ok_ratio": 0.2, "largest_adjacent_overhead_ratio": 2.0, "sweep_lo": 0.05,
            "sweep_hi": 1.0, "sweep_step": 0.01, "fine_step": 0.001, "refined_budgets": 9, "full_budget_overhead": 1.0,
            "regime_switches": 0}
    df = pd.DataFrame([
        {**base, "trace": "resnet32", "inversions": 1, "holes": 2, "oom_holes": 1, "oom_max_depth": 118,
         "oom_max_pinned_share": 0.8504},
        {**base, "trace": "pt_vit_b_16", "captured": True, "inversions": 2, "holes": 0, "oom_holes": 0,
         "oom_max_depth": None, "oom_max_pinned_share": None, "full_budget_overhead": 1.5},
    ])
    m = macros.comparison(df)
    assert m["CompareOomFailures"] == ("1 of the 2 holes of the public traces fails by running out of memory, with up"
                                       " to 85.04\\% of the budget pinned and at rematerialization depths up to 118;"
                                       " the captured traces have no hole")
    assert m["CompareSweepOnly"].startswith("On ViT-B/16 the refined sweep finds inversions where the atlas shows no")
    assert (m["CompareFullOne"], m["CompareRefined"], m["CompareFineStep"]) == ("1", "18", "0.001")
    df.loc[1, "inversions"] = 0
    assert macros.comparison(df)["CompareSweepOnly"].startswith("Every inversion of the refined sweep")


def test_tables_escape_latex_and_mark_missing_values():
    tex = tables.booktabs(pd.DataFrame({"name": ["a_b & c%"], "v": [None]}), {"v": tables.integer})
    assert r"a\_b \& c\%" in tex and "--" in tex and tex.count(r"\toprule") == 1


def _empty_generated_files(results: Path) -> Path:
    """Every file main.tex reads, empty (for builds that must fail before using them)."""
    for path in paper.layout_files(results).values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    return results


def test_a_commit_that_is_not_a_git_describe_string_is_refused(tmp_path):
    """The commit is written into TeX: nothing but a describe string gets there."""
    for bad in ("v1 }\\input{/etc/passwd}", "", "x" * 101, 7):
        with pytest.raises(ValueError, match="code_version"):
            paper.build(tmp_path / "main.tex", None, paper.layout_files(tmp_path), tmp_path / "out.pdf",
                        code_version=bad)
    assert not (tmp_path / "out.pdf").exists()


def test_latex_errors_name_the_line(tmp_path):
    main = tmp_path / "main.tex"
    main.write_text("\\documentclass{article}\n\\begin{document}\n\\UndefinedThing\n\\end{document}\n")
    results = _empty_generated_files(tmp_path / "results")
    with pytest.raises(paper.PaperBuildError, match=r"main.tex:3"):
        paper.build(main, None, paper.layout_files(results), tmp_path / "out.pdf")
    assert not (tmp_path / "out.pdf").exists()


def test_the_paper_is_built_from_the_files_it_is_given(tmp_path):
    """The build reads the files handed to it (the rule's declared inputs),
    every one main.tex needs and no other."""
    files = paper.layout_files(tmp_path)
    files.pop("figures/atlas.pdf")
    with pytest.raises(ValueError, match=r"missing \['figures/atlas.pdf'\]"):
        paper.build(tmp_path / "main.tex", None, files, tmp_path / "out.pdf")
    with pytest.raises(ValueError, match=r"unknown \['extra.tex'\]"):
        paper.build(tmp_path / "main.tex", None, {**paper.layout_files(tmp_path), "extra.tex": "x"},
                    tmp_path / "out.pdf")


def test_a_float_taller_than_the_page_fails_the_build(tmp_path):
    """Its caption would be printed off the page's foot, silently."""
    main = tmp_path / "main.tex"
    main.write_text("\\documentclass{article}\n\\begin{document}\n\\begin{figure}\\rule{1pt}{2\\textheight}"
                    "\\caption{lost}\\end{figure}\n\\end{document}\n")
    results = _empty_generated_files(tmp_path / "results")
    with pytest.raises(paper.PaperBuildError, match="does not fit on a page"):
        paper.build(main, None, paper.layout_files(results), tmp_path / "out.pdf")
    assert not (tmp_path / "out.pdf").exists()


# ----- the compiled paper, from the shared end-to-end run (conftest `run`) ---

def test_every_generated_macro_used_in_the_text_is_defined(run):
    # (Every macros file of the layout: the paper's, and the real runtime's measured one.)
    defined = set().union(*(macros.defined((run / "results" / g.path).read_text())
                            for dest, g in paper.LAYOUT.items() if dest.endswith("macros.tex")))
    used = set(re.findall(r"\\([A-Z][A-Za-z]+)", body(MAIN)))
    assert used, "the text uses no generated macro?"
    assert used <= defined, f"undefined: {sorted(used - defined)}"


def test_each_generated_file_is_produced_by_the_rule_layout_names(run):
    manifest = json.loads((run / "results/MANIFEST.json").read_text())
    by_path = {a["path"]: a for a in manifest["artifacts"]}
    for name, g in paper.LAYOUT.items():
        assert by_path[f"results/{g.path}"]["rule"] == g.rule, name
    assert by_path["results/paper/main.pdf"]["rule"] == "paper"
    assert set(manifest["executed_notebooks"]) == {f"results/notebooks/{n}.{e}" for n in
                                                   ("lstm_regimes", "resnet_inversion", "ablation")
                                                   for e in ("ipynb", "html")}


def test_pdf_carries_the_computed_numbers(run):
    pdf = run / "results/paper/main.pdf"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    claims = json.loads((run / "results/claims.json").read_text())
    assert repr(claims["C1"]["lstm_overhead_0.265"]) in text
    assert f"{claims['C2']['distinct_evicted_fast_0.265']:,}" in text
    assert f"{claims['C4']['fail_pinned_0.104']:,}" in text
    assert "??" not in text  # no unresolved reference
    # Each figure names the rule and the commit that made it.
    code = provenance.code_version(REPO)
    made = re.findall(r"made by rule (\w+) at commit (\S+)", text)
    assert sorted(made) == sorted((g.rule, code) for name, g in paper.LAYOUT.items() if name.startswith("figures/"))


def test_executed_notebooks_hold_their_figures(run):
    nb = json.loads((run / "results/notebooks/lstm_regimes.ipynb").read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "dtrlab"
    images = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert len(images) == 2
    assert (run / "results/notebooks/lstm_regimes.html").stat().st_size > 10_000


def test_report_has_captioned_figures(run, tmp_path):
    mirror = traces.default_mirror()
    report = run / "report.html"
    p = snakemake(run, "--report", str(report), "--configfile", str(run / "reduced.yaml"),
                  env={traces.MIRROR_ENV: str(Path(mirror).resolve())})
    assert p.returncode == 0, p.stderr[-3000:]
    html = report.read_text()
    for name in ("lstm_regimes", "eviction_distributions", "resnet_inversion", "pinned_frontier",
                 "ablation_heatmap", "atlas"):
        assert f"{name}.png" in html
    # Captions come from workflow/report/*.rst.
    assert "widest gap of the sorted" in html and "feasibility inversion" in html
    # The atlas page is linked from the report, with its caption.
    assert "index.html" in html and "explore" in html.lower()


def test_the_comparison_figure_is_drawn_at_the_papers_text_width(tmp_path):
    """Drawn wider, it is shrunk to fit and its 6.5 pt labels print smaller."""
    from dtrlab.report import style

    geometry = re.search(r"\\usepackage\[margin=([\d.]+)cm\]\{geometry\}", MAIN)
    assert "a4paper" in MAIN and geometry
    assert style.TEXT == pytest.approx((21.0 - 2 * float(geometry.group(1))) / 2.54)
    from dtrlab.report.compare_figure import compare_figure

    sweep = pd.DataFrame({"ratio": [0.2, 0.5, 1.0], "status": ["oom", "ok", "ok"], "overhead": [None, 1.3, 1.0]})
    pdf = tmp_path / "compare.pdf"
    compare_figure({f"t{i}": sweep for i in range(8)}, {"t7"}, pdf, None)
    box = [float(x) for x in re.search(rb"/MediaBox \[\s*([\d.\s]+)\]", pdf.read_bytes()).group(1).split()]
    width = (box[2] - box[0]) / 72  # (points to inches; cropped to its ink)
    assert 0.9 * style.TEXT <= width <= style.TEXT + 0.01, width


# ----- figure targets build alone --------------------------------------------

FIGURE_NEEDS = {
    # target: rules that must not run for it
    "fig_lstm_regimes": {"atlas_chunk", "c4_forensics", "nb_resnet_inversion", "nb_ablation", "paper"},
    "fig_resnet_inversion": {"atlas_chunk", "c2_reeviction", "nb_lstm_regimes", "nb_ablation", "paper"},
    "fig_pinned_frontier": {"atlas_chunk", "c2_reeviction", "nb_lstm_regimes", "paper"},
    "fig_ablation_heatmap": {"atlas_chunk", "c2_reeviction", "c4_forensics", "nb_lstm_regimes", "paper"},
    "fig_eviction_distributions": {"atlas_chunk", "c4_forensics", "nb_ablation", "paper"},
    "fig_atlas": {"c2_reeviction", "nb_lstm_regimes", "nb_ablation", "paper", "sweep_chunk"},
}


@pytest.mark.parametrize("target", sorted(FIGURE_NEEDS))
def test_figure_target_plans_only_what_it_needs(target, tmp_path):
    cfg = write_reduced_config(tmp_path)
    p = snakemake(tmp_path, "-n", target, "--configfile", str(cfg))
    assert p.returncode == 0, p.stderr[-2000:]
    jobs = set(re.findall(r"^(\w+)\s+\d+$", p.stdout.split("Job stats:")[1].split("total")[0], re.M))
    assert not jobs & FIGURE_NEEDS[target], jobs & FIGURE_NEEDS[target]


def test_a_figure_target_builds_in_isolation_through_papermill(tmp_path):
    mirror = traces.default_mirror()
    if mirror is None:
        pytest.skip("no artifact mirror (set DTRLAB_ARTIFACT_MIRROR)")
    cfg = write_reduced_config(tmp_path, traces=["lstm"])
    p = snakemake(tmp_path, "fig_lstm_regimes", "--configfile", str(cfg),
                  env={traces.MIRROR_ENV: str(Path(mirror).resolve())})
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    figs = tmp_path / "results/figures"
    assert (figs / "lstm_regimes.png").read_bytes()[:4] == b"\x89PNG"
    assert (figs / "lstm_regimes.pdf").read_bytes()[:5] == b"%PDF-"
    assert (tmp_path / "results/notebooks/lstm_regimes.ipynb").exists()
    assert not (tmp_path / "results/atlas").exists() and not (tmp_path / "results/paper").exists()


@pytest.mark.parametrize("supported", [True, False])
def test_the_abstracts_ablation_sentence_reads_both_ways(supported):
    c5 = {"variants_tested": ["a"], "switching_variants": [], "inverting_variants": [], "statement": "s.",
          "joint_size_staleness_supported": supported}
    verb = macros.ablation(c5, pd.DataFrame({"heuristic": ["DTR"]}))["AblationSupported"]
    sentence = re.search(r"the ablation \\AblationSupported\{\} support blaming", MAIN)
    assert sentence, "the abstract's sentence changed"
    text = sentence.group(0).replace(r"\AblationSupported{}", verb)
    assert text == ("the ablation does support blaming" if supported else "the ablation does not support blaming")


#: Every macro that yields one of two words, with the inputs giving each.
TWO_WAY = {
    "AblationSupported": [macros.ablation({"variants_tested": ["a"], "switching_variants": [], "inverting_variants": [],
                                            "statement": "s.", "joint_size_staleness_supported": v},
                                           pd.DataFrame({"heuristic": ["DTR"]}))["AblationSupported"]
                          for v in (True, False)],
    "DeterminismVerdict": [macros.determinism({"points": [{"repeats": 3}], "identical": v})["DeterminismVerdict"]
                           for v in (True, False)],
}
#: What a wrong verb form or a stray word looks like once a macro is in place.
FAULTS = [r"\b(\w+) \1\b", r"\bdoes do\b", r"\bdo does\b", r"\bdoes (not )?\w+s\b(?<!\bdoes)", r"\bnot not\b",
          r"\bnot identical identical\b"]


def sentences_using(macro: str, tex: str) -> list[str]:
    text = " ".join(body(tex).split())
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\\])", text) if f"\\{macro}" in s]


@pytest.mark.parametrize("macro", sorted(TWO_WAY))
def test_every_two_way_sentence_reads_both_ways(macro):
    """Each sentence using a two-way macro is rendered with both of its values:
    no doubled word, no "does do", no "does supports" in either."""
    found = sentences_using(macro, MAIN)
    assert found, f"\\{macro} is no longer used in the text"
    assert len(set(TWO_WAY[macro])) == 2
    for value in TWO_WAY[macro]:
        for s in found:
            rendered = re.sub(rf"\\{macro}(\{{\}})?", value, s)
            bad = [f for f in FAULTS if re.search(f, rendered)]
            assert not bad, f"with \\{macro} = {value!r}: {rendered!r} matches {bad}"


def test_the_two_way_check_catches_the_old_abstract():
    old = r"\begin{document} and the ablation does \AblationSupported{} support blaming it. \end{document}"
    s = sentences_using("AblationSupported", old)
    assert any(re.search(f, re.sub(r"\\AblationSupported\{\}", "does not", s[0])) for f in FAULTS)


#: The macros that carry a count with its noun, and what must follow them.
COUNTED = ["AtlasHolesPhrase", "AtlasTracesWithHolesPhrase", "CompareCapturedHolesPhrase", "ResnetInversionsPhrase",
           "LstmSweepFastPhrase", "LstmSweepSwitchTimes", "LstmSweepFailsPhrase"]
#: A count beside a noun that does not agree with it.
MISCOUNTED = [r"\b1 (\w+ )?\w+s\b(?<!\btimes)(?<!\bis)", r"\b0 of\b", r"\bof the 1 \w", r"\b(1|one) \w+ are\b",
              r"\b[02-9]\d* [\w ]*\b(budget|hole|trace|band) is\b", r"\b1 times\b", r"\b(\w+) \1\b"]


def counted_values(macro: str, n: int) -> str:
    """The macro's text for a count of ``n``, from the functions that make it."""
    c1 = {"points": {}, "largest_adjacent_ratio_points": None, "n_fast": n, "n_slow": 1, "n_failed": n, "switches": n}
    return {
        "AtlasHolesPhrase": macros.counted(n, "feasibility hole", "feasibility holes", "no feasibility hole"),
        "AtlasTracesWithHolesPhrase": macros.counted(n, "trace", "traces"),
        "CompareCapturedHolesPhrase": macros.counted(n, "hole", "holes", "no hole"),
        "ResnetInversionsPhrase": macros.counted(n, "such band", "such bands", "no such band"),
        "LstmSweepFastPhrase": macros.counted(c1["n_fast"], "budget is fast", "budgets are fast"),
        "LstmSweepSwitchTimes": macros.times(c1["switches"]),
        "LstmSweepFailsPhrase": "never fails in the sweep" if not n else
        f"fails at {macros.counted(n, 'budget', 'budgets')} of the sweep",
    }[macro]


@pytest.mark.parametrize("macro", COUNTED)
def test_every_counted_sentence_agrees_in_number(macro):
    """Each sentence with a count macro, rendered for 0, 1, 2 and 35: the
    noun agrees with its count and no word is doubled; the bare count
    macros no longer stand before a noun of their own in the text."""
    found = sentences_using(macro, MAIN)
    assert found, f"\\{macro} is no longer used in the text"
    for n in (0, 1, 2, 35):
        value = counted_values(macro, n)
        for sentence in found:
            rendered = re.sub(rf"\\{macro}(\{{\}})?", value, sentence)
            bad = [f for f in MISCOUNTED if re.search(f, rendered)]
            assert not bad, f"with {n}: {rendered!r} matches {bad}"
    bare = re.findall(r"\\(AtlasHoles|AtlasTracesWithHoles|CompareCapturedHoles|ResnetInversions|LstmSweepFailed"
                      r"|LstmSweepSwitches)\{\} [a-z]+", MAIN)
    assert not bare, bare


@pytest.mark.parametrize("ooms, holes", [(0, 1), (1, 1), (0, 3), (1, 3), (2, 3), (3, 3)])
def test_the_oom_clause_reads_for_every_count(ooms, holes):
    text = macros.oom_holes_clause(ooms, holes, "public")
    assert not any(re.search(f, text) for f in MISCOUNTED), text
    assert ("all" in text) == (ooms == holes > 1) and ("none" in text) == (ooms == 0 and holes > 1)


#: How the appendix's first page opens (main.tex: \appendix after \clearpage).
from dtrlab.report.pages import APPENDIX  # noqa: E402


def test_page_fill_sees_a_page_left_half_empty(tmp_path):
    """Three A4 pages drawn by matplotlib: full, a fifth, full. The second is
    near empty; the last page is never counted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    from dtrlab.report import pages

    pdf = tmp_path / "three.pdf"
    # (matplotlib's own defaults: another test may have set the paper theme in this process)
    with matplotlib.style.context("default"), PdfPages(pdf) as out:
        for share in (0.8, 0.16, 0.1):
            fig = plt.figure(figsize=(8.27, 11.69))
            for i in range(int(share * 100)):  # lines of "text" from the top of the text block
                fig.text(0.1, 0.9 - i * 0.008, "x" * 80, fontsize=5, family="monospace")
            fig.text(0.5, 0.03, "7")  # a page number, which does not count
            out.savefig(fig)
            plt.close(fig)
    fills = pages.page_fill(pdf)
    assert len(fills) == 3 and fills[0] > 0.9 and fills[1] < 0.3
    assert pages.near_empty_pages(pdf) == [2]
    assert pages.near_empty_pages(pdf, parts=("x" * 80,)) == []  # page 3 opens a part: page 2 ends one


def test_a_bad_pdf_is_a_clear_error(tmp_path):
    from dtrlab.report import pages

    bad = tmp_path / "bad.pdf"
    bad.write_text("not a pdf")
    with pytest.raises(pages.PageCheckError, match="bad.pdf"):
        pages.page_fill(bad)


def test_no_page_but_the_last_is_more_than_half_empty(run):
    """No float left alone on a page, no page broken early (the body's last
    page, before the appendix starts on a page of its own, may end short)."""
    from dtrlab.report import pages

    pdf = run / "results/paper/main.pdf"
    assert pages.near_empty_pages(pdf, parts=(APPENDIX,)) == [], pages.page_fill(pdf)


@pytest.mark.parametrize("k, n, start", [(13, 13, "All 13 traces replay"), (0, 4, "None of the 4 traces replays"),
                                         (1, 4, "1 of the 4 traces replays"), (3, 4, "3 of the 4 traces replay")])
def test_the_peak_sentence_reads_for_every_count(k, n, start):
    assert macros.full_one_sentence(k, n).startswith(start)
