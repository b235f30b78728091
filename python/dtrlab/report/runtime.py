"""The paper's section "In a real runtime": its table, its figure and the
numbers of its prose (``runtime_macros.tex``), from the summary of
:mod:`dtrlab.analysis.runtime`. The sentences that state a verdict are
written here for every value they can take (the tests render both ways)."""

from __future__ import annotations

import math

import pandas as pd

from dtrlab.analysis import runtime as analysis
from dtrlab.report import macros as m
from dtrlab.report.style import COLORS, MARKERS, PAGE, pyplot, save
from dtrlab.report.tables import booktabs, decimal, escape, integer

WORKLOAD_NAMES = {"resnet50": "ResNet-50", "vit_b_16": "ViT-B/16", "gpt2_small": "GPT-2 small",
                  "lstm_lm": "LSTM LM", "unet": "U-Net", "lstm_2020": "LSTM (2020)",
                  "resnet32_2020": "ResNet-32 (2020)"}


def _name(w: str) -> str:
    return WORKLOAD_NAMES.get(w, w)


def _of(a, b) -> str:
    return f"{int(a)}/{int(b)}"


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def table(df: pd.DataFrame) -> str:
    t = pd.DataFrame({
        "workload": [_name(w) for w in df.workload],
        "ops": df.operators,
        "peak (MB)": df.peak / 1e6,
        "holes": [f"{int(a)}/{int(b)}" for a, b in zip(df.holes_run, df.sim_holes)],
        "switches": [f"{int(a)}/{int(b)}" for a, b in zip(df.switches_run, df.sim_switches)],
        "budgets": df.budgets,
        "same decisions": [_of(a, b) for a, b in zip(df.same_decisions, df.budgets)],
        "bitwise": [_of(a, b) for a, b in zip(df.equal, df.ok)],
        "wall (×)": df.wall_overhead_tightest,
        "us/call": df.bookkeeping_us_per_call,
        "alloc. (×)": df.allocator_over_budget,
        "measured agree": [_of(a, b) for a, b in zip(df.measured_agree, df.measured_budgets)],
    })
    return booktabs(t, {"ops": integer, "peak (MB)": decimal(1), "budgets": integer, "wall (×)": decimal(2),
                        "us/call": decimal(0), "alloc. (×)": decimal(2)}, align="lrrrrrrrrrrr")


def switch_sentence(switches: int, model: tuple[float, float] | None, wall: tuple[float, float] | None) -> str:
    """``model`` and ``wall``: the smallest and largest factor by which the
    modelled overhead and the measured wall-clock time change across a switch."""
    if switches == 0:
        return ("No regime switch (neighbouring budgets whose overheads differ by the stated factor) was run "
                "on both sides, so none can be seen in real execution here.")
    if switches == 1:
        return (f"The runtime ran one regime switch on both sides: across it the modelled overhead changes "
                f"{model[1]:.2f}-fold and the measured wall-clock time {wall[1]:.2f}-fold.")
    return (f"The runtime ran {switches} regime switches on both sides: across them the modelled overhead "
            f"changes {model[0]:.2f}- to {model[1]:.2f}-fold and the measured wall-clock time {wall[0]:.2f}- to "
            f"{wall[1]:.2f}-fold.")


def hole_sentence(holes: int, run: int) -> str:
    if holes == 0:
        return ("The atlas finds no feasibility hole (failing budgets between feasible ones) on the workloads' "
                "own traces, so none is tested in real execution.")
    unit = "hole" if holes == 1 else "holes"
    if run == 0:
        return (f"The atlas finds {holes} feasibility {unit} on the workloads' own traces, but the runtime ran "
                f"none of {'it' if holes == 1 else 'them'} on both sides and inside.")
    return (f"The atlas finds {holes} feasibility {unit} on the workloads' own traces; the runtime ran {run} "
            f"of them on both sides and inside, and {'it appears' if run == 1 else 'each appears'} in real "
            "execution: the step runs out of memory inside and completes on both sides, as the simulator says.")


def edge_sentence(edges: int, tested: int) -> str:
    if tested == 0:
        return "No workload's lowest feasible budget was among the budgets run."
    if edges == tested:
        return (f"On all {tested} workloads whose lowest feasible budget was run, the step ran out of memory "
                "one byte below it and completed at it.")
    return (f"On {edges} of the {tested} workloads whose lowest feasible budget was run, the step ran out of "
            "memory one byte below it and completed at it.")


def exact_sentence(same: int, budgets: int, equal: int, ok: int) -> str:
    if same == budgets and equal == ok:
        return (f"At all {budgets} budgets the runtime's evictions and rematerializations were the "
                f"simulator's, and all {ok} completed steps were bitwise equal to the step without it.")
    return (f"At {same} of {budgets} budgets the runtime's decisions were the simulator's, and {equal} of {ok} "
            "completed steps were bitwise equal to the step without it.")


def measured_sentence(agree: int, budgets: int) -> str:
    if budgets == 0:
        return "The measured mode ran no budget."
    if agree == budgets:
        return (f"Outcome and regime agreed with the simulator's replay of the timed plan at all {budgets} "
                "budgets.")
    return (f"Outcome and regime agreed with the simulator's replay of the timed plan at {agree} of {budgets} "
            f"budgets ({100 * agree / budgets:.0f}\\%).")


def measured_pathology_sentence(holes: int, holes_run: int, switches: int, switches_kept: int,
                                factor: float) -> str:
    """Whether the holes and switches run in model memory appear in measured
    mode too: ``holes`` of ``holes_run`` holes fail inside with both sides
    completing there; ``switches_kept`` of the ``switches`` switches whose
    two sides complete there keep overheads ``factor``-fold apart."""
    parts = []
    if holes_run:
        if holes == holes_run:
            parts.append("the hole appears too" if holes_run == 1 else f"all {holes_run} holes appear too")
        elif holes == 0:
            parts.append("the hole does not appear" if holes_run == 1 else f"none of the {holes_run} holes appears")
        else:
            parts.append(f"{holes} of the {holes_run} holes {'appears' if holes == 1 else 'appear'} too")
    if switches:
        what = f"overheads {factor:g}-fold apart or more"
        if switches_kept == switches:
            parts.append(f"the one switch whose sides both complete keeps {what}" if switches == 1
                         else f"all {switches} switches whose sides both complete keep {what}")
        elif switches_kept == 0:
            parts.append(f"the one switch whose sides both complete does not keep {what}" if switches == 1
                         else f"none of the {switches} switches whose sides both complete keeps {what}")
        else:
            parts.append(f"{switches_kept} of the {switches} switches whose sides both complete "
                         f"{'keeps' if switches_kept == 1 else 'keep'} {what}")
    if not parts:
        return "In measured mode, no hole or regime switch was run on both sides to completion."
    return "In measured mode, " + "; ".join(parts) + "."


def memory_sentence(allocator_max: float | None, process_mb: float | None) -> str:
    """What was measured beside the ledger: the C allocator's peak (with the
    constants it held before the step) over the budget, the process's peak."""
    parts = []
    if allocator_max is not None:
        parts.append(f"the C allocator's bytes in use, with the parameters and inputs it held before the step, "
                     f"peaked at up to {allocator_max:.2f} times the budget (its own rounding and PyTorch's "
                     "metadata beside the tensors)")
    if process_mb is not None:
        parts.append(f"the process's resident set rose by at most {process_mb:,.0f}~MB above its start")
    if not parts:
        return "This system gave no allocator or process figures to measure beside the ledger."
    return "Measured beside the ledger, " + ", and ".join(parts) + "."


def verdict_sentence(holes: int, switches: int, visible: int, factor: float) -> str:
    """``visible``: the switches whose wall-clock time changes by ``factor`` or more."""
    if not holes and not switches:
        return "With no hole or switch run on both sides, this study cannot tell whether they appear in real execution."
    parts = []
    if holes:
        parts.append("feasibility holes are not artefacts of replaying a trace: executed for real, the same step "
                     "runs out of memory and completes at the same budgets")
    if switches:
        if visible == switches:
            parts.append(f"{'every' if switches > 1 else 'the'} regime switch shows in wall-clock time too "
                         f"(a change of {factor:g}-fold or more)")
        elif visible == 0:
            parts.append("no regime switch shows in wall-clock time by "
                         f"{factor:g}-fold or more: the runtime's own cost per operator hides it")
        else:
            rest = "in the other" if switches - visible == 1 else "in the others"
            parts.append(f"{visible} of the {switches} regime switches {'shows' if visible == 1 else 'show'} in "
                         f"wall-clock time too (a change of {factor:g}-fold or more); {rest} the runtime's own cost "
                         "per operator hides the recomputations")
    return "In model memory, then, " + "; and ".join(parts) + "."


def measured_why(fails_more: int, completes_more: int) -> str:
    """Why the measured mode departs, as far as the data say: which way."""
    if not fails_more and not completes_more:
        return ""
    parts = []
    if fails_more:
        parts.append(f"at {fails_more} {'budget' if fails_more == 1 else 'budgets'} the measured mode ran out of "
                     "memory where the simulator completes")
    if completes_more:
        parts.append(f"at {completes_more} it completed where the simulator runs out of memory")
    text = "Of the budgets where they differ, " + ", and ".join(parts) + "."
    if fails_more:
        text += (" The allocator counts more than the model's tensors: its own rounding, and what PyTorch allocates "
                 "beside them for every operator (tensor and autograd metadata), which weighs most where tensors "
                 "are small; we take this to be why.")
    return text


def abstract_sentence(holes: int, switches: int, visible: int, same: int, budgets: int) -> str:
    decided = ("with every decision the simulator's" if same == budgets
               else f"with the simulator's decisions at {same} of {budgets} budgets")
    head = (f"Finally, a runtime on stock PyTorch that really frees and recomputes tensors, {decided}, runs "
            "workloads of today on the CPU")
    if not holes and not switches:
        return head + "; no hole or switch was run on both sides."
    parts = []
    if holes:
        parts.append(f"{holes} feasibility {'hole' if holes == 1 else 'holes'} of their traces"
                     f" {'appears' if holes == 1 else 'appear'} in real execution")
    if switches:
        parts.append(f"{switches} regime {'switch' if switches == 1 else 'switches'}"
                     f" {'changes' if switches == 1 else 'change'} what it recomputes"
                     f" ({'all' if visible == switches else 'none' if visible == 0 else visible} of them visibly"
                     " in wall-clock time)" if switches > 1 else
                     f"one regime switch changes what it recomputes"
                     f"{' and its wall-clock time' if visible else ''}")
    return head + ": " + ", and ".join(parts) + "."


def macros(df: pd.DataFrame, decisions: pd.DataFrame, measured: pd.DataFrame, min_gap: float) -> str:
    meas = measured[measured["mode"] == "measured"]
    switches = int(df.switches_run.sum())
    run = df[df.switches_run > 0]
    span = (lambda lo, hi: (float(run[lo].min()), float(run[hi].max())) if len(run) else None)
    i = int(run.switch_wall_ratio.astype(float).idxmax()) if len(run) else None
    shifts = df.measured_edge_shift.dropna().astype(float)
    values = {
        "RuntimeWorkloads": str(len(df)),
        "RuntimeBudgets": integer(df.budgets.sum()),
        "RuntimeOk": integer(df.ok.sum()),
        "RuntimeSameDecisions": integer(df.same_decisions.sum()),
        "RuntimeEqual": integer(df.equal.sum()),
        "RuntimeSimSwitches": str(int(df.sim_switches.sum())),
        "RuntimeSimHoles": str(int(df.sim_holes.sum())),
        "RuntimeSwitchesRun": str(switches),
        "RuntimeExactSentence": exact_sentence(int(df.same_decisions.sum()), int(df.budgets.sum()),
                                               int(df.equal.sum()), int(df.ok.sum())),
        "RuntimeSwitchSentence": switch_sentence(switches, span("switch_model_ratio_min", "switch_model_ratio"),
                                                 span("switch_wall_ratio_min", "switch_wall_ratio")),
        "RuntimeHoleSentence": hole_sentence(int(df.sim_holes.sum()), int(df.holes_run.sum())),
        "RuntimeEdgeSentence": edge_sentence(int((df.edge_exact == True).sum()),  # noqa: E712
                                             int(df.edge_exact.notna().sum())),
        "RuntimeHolesRun": str(int(df.holes_run.sum())),
        "RuntimeSwitchWorkload": escape(_name(df.workload.iloc[i])) if i is not None else "--",
        "RuntimeMinGap": f"{min_gap:g}\\x",
        "RuntimeMeasuredSentence": measured_sentence(int(meas.agree.sum()), len(meas)),
        "RuntimeAbstractSentence": abstract_sentence(int(df.holes_run.sum()), switches,
                                                     int(df.switches_in_wall_time.sum()),
                                                     int(df.same_decisions.sum()), int(df.budgets.sum())),
        "RuntimeVerdictSentence": verdict_sentence(int(df.holes_run.sum()), switches,
                                                   int(df.switches_in_wall_time.sum()), analysis.WALL_VISIBLE),
        "RuntimeMeasuredWhy": measured_why(int(((meas.status != "ok") & (meas.sim_status == "ok")).sum()),
                                           int(((meas.status == "ok") & (meas.sim_status != "ok")).sum())),
        "RuntimeMeasuredAgree": integer(meas.agree.sum()),
        "RuntimeMeasuredBudgets": integer(len(meas)),
        "RuntimeMeasuredShare": m.percent(meas.agree.mean() if len(meas) else 0, 0),
        "RuntimeEdgeShiftMax": f"{shifts.max():+.3f}" if len(shifts) else "--",
        "RuntimeEdgeShiftWorkload": escape(_name(df.workload.iloc[int(shifts.idxmax())])) if len(shifts) else "--",
        "RuntimeBookkeepingMedian": f"{df.bookkeeping_us_per_call.dropna().median():.0f}",
        "RuntimeBookkeepingMax": f"{df.bookkeeping_us_per_call.dropna().max():.0f}",
        "RuntimeTransientMax": integer(df.transient_over_budget.max()),
        "RuntimeMeasuredPathologySentence": measured_pathology_sentence(
            int(df.measured_holes_run.sum()), int(df.holes_run.sum()), int(df.measured_switches_run.sum()),
            int(df.measured_switches_kept.sum()), min_gap),
        "RuntimeMemorySentence": memory_sentence(
            None if df.allocator_over_budget.dropna().empty else float(df.allocator_over_budget.dropna().max()),
            None if df.process_peak_mb.dropna().empty else float(df.process_peak_mb.dropna().max())),
    }
    return m.render(values)


def figure(sweeps: pd.DataFrame, decisions: pd.DataFrame, measured: pd.DataFrame, pdf_path, png_path) -> None:
    """Per workload: the simulator's overhead over the budget axis (line);
    the runtime's wall-clock time at each budget it ran, relative to its own
    run at the highest completed budget (squares: what recomputation adds,
    the runtime's constant cost per operator divided out); the measured
    mode's modelled overhead (triangles); budgets that failed (crosses)."""
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter, LogLocator

    names = list(dict.fromkeys(decisions.workload))
    cols = 4
    rows = max(1, math.ceil((len(names) + 1) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(PAGE, 1.75 * rows), squeeze=False)
    model = measured[measured["mode"] == "model"]
    meas = measured[measured["mode"] == "measured"]
    for ax, w in zip(axes.flat, names):
        sw = sweeps[(sweeps.workload == w) & (sweeps.status == "ok")].sort_values("ratio")
        ax.plot(sw.ratio, sw.overhead, color=COLORS["fast"], linewidth=0.9, marker="." if len(sw) < 3 else None,
                label="simulator: modelled overhead")
        mo = model[model.workload == w]
        ok = mo[mo.status == "ok"].sort_values("ratio")
        if len(ok):
            top = ok.iloc[-1].wall_ns
            ax.plot(ok.ratio, ok.wall_ns / top, linestyle="none", marker=MARKERS["slow"], markersize=2.6,
                    color=COLORS["accent"], label="runtime: wall-clock time (÷ at the top)")
        me = meas[(meas.workload == w) & (meas.status == "ok")]
        ax.plot(me.ratio, me.overhead, linestyle="none", marker=MARKERS["thrashed"], markersize=2.6,
                color=COLORS["thrashed"], label="measured mode: modelled overhead")
        bad = mo[mo.status != "ok"]
        ax.plot(bad.ratio, [1.0] * len(bad), linestyle="none", marker=MARKERS["oom"], markersize=3,
                color=COLORS["oom"], label="runtime: out of memory")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        lo = min(mo.ratio.min(), sw.ratio.min() if len(sw) else 1.0)
        ax.set_xlim(max(0.0, lo - 0.05), 1.02)
        ax.set_title(_name(w), fontsize=7)
        ax.tick_params(labelsize=6)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    legend_ax = axes.flat[len(names)] if len(names) < rows * cols else None
    if legend_ax is not None:
        legend_ax.legend(handles, labels, loc="center", fontsize=6)
    else:
        fig.legend(handles, labels, loc="lower center", ncols=2, fontsize=6)
    fig.supxlabel("budget (fraction of the step's peak)", fontsize=7)
    fig.supylabel("overhead (×)", fontsize=7)
    fig.tight_layout()
    save(fig, pdf_path, png_path)
    plt.close(fig)
