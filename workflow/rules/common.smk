# Configuration validated against the schema (defaults filled in), and the
# paths every rule shares.
import os

from dtrlab import config as dtrlab_config
from dtrlab.engine import RANDOM_HEURISTICS
from dtrlab.grids import chunks, expand_ratios
from dtrlab.provenance import code_version, sidecar_path, unrecorded
from dtrlab.reference import SIMRD_ENV
from dtrlab.traces import ARTIFACT_URL, TRACE_FILES, MIRROR_ENV, default_mirror

try:
    config = dtrlab_config.validate(config, dtrlab_config.schema())
except dtrlab_config.ConfigError as e:
    raise WorkflowError(f"invalid configuration: {e}")

CONFIG_SHA256 = dtrlab_config.config_hash(config)


wildcard_constraints:
    trace="[a-z0-9_]+",
    sweep="[a-z0-9_]+",
    chunk="[0-9]+",
    heuristic="[A-Za-z]+",


DATA = config["data_dir"]
RESULTS = config["results_dir"]
TRACES = config["traces"]
# The environment wins over the config; else a sibling shared/ copy if present.
MIRROR = os.environ.get(MIRROR_ENV) or config["artifact"]["mirror"] or default_mirror()
if MIRROR:
    # Handed to the fetch step through its environment, not as a param: where
    # the (sha256-pinned) archive comes from must not make Snakemake redo work.
    os.environ[MIRROR_ENV] = MIRROR


# The engine every experiment uses: ours, or the reference simulator from a
# configured checkout (downloaded at the pinned commit when none is given).
ENGINE = config["engine"]["name"]
# How every step parses a trace: from its ANNOTATE START marker or not.
START = config["engine"]["start"]
SIMRD = os.environ.get(SIMRD_ENV) or config["simrd"]["path"]
SIMRD_FETCHED = "data/simrd"


if ENGINE == "simrd":
    # Jobs find the reference checkout through their environment, as
    # the fetch step finds the mirror (a machine path is no input of the study).
    os.environ[SIMRD_ENV] = SIMRD or SIMRD_FETCHED


def engine_inputs(wildcards):
    """The reference checkout, when it must be fetched first."""
    return [SIMRD_FETCHED] if ENGINE == "simrd" and not SIMRD else []


# Traces captured from PyTorch (workflow/rules/capture.smk): key pt_<model>.
CAPTURE = config["capture"]
# A model the configuration does not name keeps its default batch size.
CAPTURE_BATCH = {**dtrlab_config.defaults()["capture"]["batch"], **CAPTURE["batch"]}
CAPTURED = {f"pt_{m}": m for m in CAPTURE["models"]}
# Every trace the comparison covers: the public ones, then the captured ones.
ALL_TRACES = [*TRACES, *CAPTURED]


def trace_file(key):
    """Verified trace file of a public trace key, or a captured trace's file."""
    if key in CAPTURED:
        return f"{DATA}/captured/{key}.log"  # named by its key: dtrlab reads the key off the file name
    return f"{DATA}/{TRACE_FILES[key]}"


def trace_input(wildcards):
    return trace_file(wildcards.trace)


# ----- experiments -----------------------------------------------------------
EXP = config["experiments"]
HEURISTIC = config["engine"]["heuristic"]
CAP = config["engine"]["cap"]


def points(heuristics, ratios, seeds=(0,)):
    """Replay points: each heuristic at each ratio (random ones once per seed)."""
    return [
        {"heuristic": h, "ratio": r, "cap": CAP, "seed": s}
        for h in heuristics
        for s in (seeds if h in RANDOM_HEURISTICS else (0,))
        for r in ratios
    ]


# Every sweep: a trace and its replay points, run in chunks of parallel jobs
# (compare_<trace>: every trace, public and captured, on one DTR sweep).
SWEEPS = {
    **{
        f"compare_{t}": {
            "trace": t,
            "points": points([HEURISTIC], expand_ratios(CAPTURE["ratios"])),
        }
        for t in ALL_TRACES
    },
    "lstm_dtr": {
        "trace": "lstm",
        "points": points([HEURISTIC], expand_ratios(EXP["lstm_regimes"]["ratios"])),
    },
    "resnet32_dtr": {
        "trace": "resnet32",
        "points": points([HEURISTIC], expand_ratios(EXP["resnet32_sweep"]["ratios"])),
    },
    "ablation_lstm": {
        "trace": "lstm",
        "points": points(
            EXP["ablation"]["heuristics"],
            expand_ratios(EXP["ablation"]["lstm_ratios"]),
            EXP["ablation"]["seeds"],
        ),
    },
    "ablation_resnet32": {
        "trace": "resnet32",
        "points": points(
            EXP["ablation"]["heuristics"],
            expand_ratios(EXP["ablation"]["resnet32_ratios"]),
            EXP["ablation"]["seeds"],
        ),
    },
}


def sweep_chunks(name):
    return chunks(SWEEPS[name]["points"], EXP["chunk_size"])


def sweep_chunk_files(wildcards):
    sweep = wildcards.sweep
    n = len(sweep_chunks(sweep))
    return [f"{RESULTS}/sweeps/{sweep}/chunk-{i:03d}.parquet" for i in range(n)]


def atlas_files(atlas):
    """Every trace's merged atlas of `atlas`: atlas and atlas-preview map the
    public traces (config atlas.traces), atlas-captured the captured ones."""
    traces = list(CAPTURED) if atlas == "atlas-captured" else config["atlas"]["traces"]
    return [
        f"{RESULTS}/{atlas}/{t}/{h}/atlas.json"
        for t in traces
        for h in config["atlas"]["heuristics"]
    ]


def compare_atlas(wildcards):
    """The trace's atlas of the sweep's heuristic, where it has one (a list)."""
    trace = wildcards.trace
    name = "atlas-captured" if trace in CAPTURED else "atlas"
    path = f"{RESULTS}/{name}/{trace}/{HEURISTIC}/atlas.json"
    return [path] if path in atlas_files(name) else []


# Every step (dtrlab.steps, the function named after its rule) runs through
# this script, which hands it the rule's named inputs, outputs and params.
STEP = "../scripts/step.py"


# Every hashed artifact, by topic; the manifest rule hashes them all.
ARTIFACTS = {}


# ----- paper -------------------------------------------------------------------
FIGURES = f"{RESULTS}/figures"
NOTEBOOKS = f"{RESULTS}/notebooks"
# The fixed kernel the notebooks name ("dtrlab"): this interpreter's Python.
KERNELS = os.path.dirname(
    os.path.dirname(
        os.path.dirname(workflow.source_path("../jupyter/kernels/dtrlab/kernel.json"))
    )
)
# Jupyter finds it through the jobs' environment (optional, so not `envvars:`):
# as a param, this per-run cache path would make Snakemake redo the notebooks
# on every invocation.
JUPYTER_PATH = "JUPYTER_PATH"
os.environ[JUPYTER_PATH] = os.pathsep.join(
    p for p in (KERNELS, os.environ.get(JUPYTER_PATH)) if p
)


def notebook(name):
    return workflow.source_path(f"../../notebooks/{name}.ipynb")


def figure(name):
    """A figure's PDF and PNG; the PNG goes into `snakemake --report`, with
    the caption workflow/report/NAME.rst."""
    png = report(
        f"{FIGURES}/{name}.png",
        caption=f"../report/{name}.rst",
        category="Figures",
        labels={"figure": name},
    )
    return [f"{FIGURES}/{name}.pdf", png]


# Runs a notebook with papermill (parameters: its named inputs, the figure
# folder and the rule's name), then renders the executed copy to HTML.
PAPERMILL = (
    "papermill {input.notebook:q} {output.notebook:q} -k dtrlab "
    "{params.args:q} -p out_dir {params.out_dir:q} -p rule "
    "{params.rule:q} > {log:q} 2>&1 && "
    "jupyter nbconvert --to html --log-level WARN {output.notebook:q} --output-dir {params.html_dir:q} >> {log:q} 2>&1"
)


def papermill_args(**inputs):
    """papermill's `-p NAME VALUE` words (a list: `{params.args:q}` quotes each)."""
    return [word for k, v in inputs.items() for word in ("-p", k, v)]
