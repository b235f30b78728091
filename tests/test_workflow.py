"""The Snakemake workflow: config validation, verified download, DAG, an end
to end target with a verified manifest, byte-identical reruns, resumption."""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import write_reduced_config
from dtrlab import config as dtrlab_config
from dtrlab import provenance, traces
from dtrlab.steps.manifests import make_manifest

REPO = Path(__file__).resolve().parents[1]
def small(work: Path) -> list[str]:
    """Options selecting the reduced grids (and the baselines of three traces)."""
    work.mkdir(parents=True, exist_ok=True)
    return ["--configfile", str(write_reduced_config(work, traces=["lstm", "resnet32", "unet"]))]


def snakemake(workdir: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the repository's workflow in ``workdir`` (args name the targets)."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--cores", "2", *args]
    # Rules call the `dtrlab` command of this interpreter's environment.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    full_env = {**os.environ, "PATH": path, **(env or {})}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=full_env)


@pytest.fixture(scope="module")
def mirror() -> str:
    m = traces.default_mirror()
    if m is None:
        pytest.skip("no artifact mirror (set DTRLAB_ARTIFACT_MIRROR)")
    return str(Path(m).resolve())


@pytest.fixture(scope="module")
def schema() -> dict:
    return yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())


def test_shipped_config_is_valid_and_equals_the_defaults(schema):
    shipped = dtrlab_config.load(REPO / "config/config.yaml")
    assert shipped == dtrlab_config.validate({}, schema)


@pytest.mark.parametrize(
    "bad, key",
    [
        ({"traces": ["lstm", "gpt"]}, "traces.1"),
        ({"traces": []}, "traces"),
        ({"engine": {"cap": 0.5}}, "engine.cap"),
        ({"engine": {"name": "fast"}}, "engine.name"),
        # Not a setting: the analyses are written for the pinned traces.
        ({"artifact": {"sha256": "63579a07" + "0" * 56}}, "artifact.sha256"),
        ({"artifact": {"url": 5}}, "artifact.url"),
        ({"artifact": {"retries": 0}}, "artifact.retries"),
        ({"data_dir": 5}, "data_dir"),
        ({"data_dir": "data/$(touch PWNED_data)"}, "data_dir"),
        ({"data_dir": "data`touch PWNED`"}, "data_dir"),
        ({"results_dir": "results; touch PWNED"}, "results_dir"),
        ({"results_dir": "results\nx"}, "results_dir"),
        ({"enigne": {}}, "enigne"),
        ({"experiments": {"chunk_sise": 4}}, "experiments.chunk_sise"),
        ({"atlas": {"max_wrok": 10}}, "atlas.max_wrok"),
        ({"engine": {"heuristic": "Nope"}}, "engine.heuristic"),
        ({"engine": {"heuristic": "DTR'; touch PWNED; echo '"}}, "engine.heuristic"),
        ({"atlas": {"heuristics": ["DTR", "Nope"]}}, "atlas.heuristics.1"),
        ({"experiments": {"chunk_size": "four"}}, "experiments.chunk_size"),
    ],
)
def test_schema_rejects_bad_config_naming_the_key(schema, bad, key):
    with pytest.raises(dtrlab_config.ConfigError, match=rf"config key '{key}'"):
        dtrlab_config.validate(bad, schema)


def test_a_misspelled_key_is_named_with_its_closest_spelling(schema):
    with pytest.raises(dtrlab_config.ConfigError, match=r"did you mean 'chunk_size'\?"):
        dtrlab_config.validate({"experiments": {"chunk_sise": 4}}, schema)


def test_the_schema_is_the_only_source_of_defaults():
    """The API, the CLI and the atlas take their defaults from the schema the
    workflow validates with (one file, shipped in the package)."""
    import argparse

    from dtrlab import atlas, cli, engine, reference

    assert (REPO / "workflow/schemas/config.schema.yaml").resolve() == dtrlab_config.SCHEMA_PATH.resolve()
    d = dtrlab_config.defaults()
    assert d == dtrlab_config.validate({}, dtrlab_config.schema())
    assert (engine.DEFAULT_CAP, engine.DEFAULT_HEURISTIC) == (d["engine"]["cap"], d["engine"]["heuristic"])
    assert atlas.LIMITS == d["atlas"]
    assert traces.DEFAULT_RETRIES == d["artifact"]["retries"]
    for fn in (traces.fetch_archive, reference.fetch):
        assert inspect.signature(fn).parameters["retries"].default is None  # meaning DEFAULT_RETRIES
    for fn in (engine.simulate, reference.simulate):
        params = inspect.signature(fn).parameters
        assert (params["cap"].default, params["heuristic"].default) == (d["engine"]["cap"], d["engine"]["heuristic"])
    params = inspect.signature(atlas.build).parameters
    for key in ("max_runs", "walk_ops", "walk_share", "time_limit", "grid", "max_total_runs", "edge_runs", "max_work",
                "resolve"):
        assert params[key].default == d["atlas"][key], key
    parser = cli.build_parser()
    at = next(a for a in parser._subparsers._group_actions[0].choices.values() if a.prog.endswith(" atlas"))
    got = at.parse_args(["resnet32", "--lo", "0.1", "--hi", "0.2"])
    assert isinstance(at, argparse.ArgumentParser)
    for key in ("max_runs", "walk_ops", "walk_share", "time_limit", "grid", "max_total_runs", "edge_runs",
                "max_work"):
        assert getattr(got, key) == d["atlas"][key], key
    assert (got.cap, got.heuristic) == (d["engine"]["cap"], d["engine"]["heuristic"])
    # The defaults are copies: changing one changes no other reader's.
    d["engine"]["cap"] = 2.0
    assert dtrlab_config.defaults()["engine"]["cap"] == engine.DEFAULT_CAP


def test_the_package_needs_only_its_core_dependencies_to_import():
    """Defaults come from the schema without validating it: `import dtrlab`
    and the API need no workflow extra (jsonschema, snakemake)."""
    code = "import sys, dtrlab, dtrlab.atlas, dtrlab.cli; print(sorted({'jsonschema', 'snakemake'} & set(sys.modules)))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stdout + p.stderr


def test_the_schema_knows_every_heuristic_of_the_engine(schema):
    import dtrlab

    assert schema["definitions"]["heuristic"]["enum"] == list(dtrlab.HEURISTICS)


@pytest.mark.parametrize(
    "override",
    [
        # docs/WORKFLOW.md's own examples, as a shell passes them.
        ["traces=[lstm,resnet32]"],
        ['atlas={"traces": [resnet32, lstm]}'],
        ['experiments={"chunk_size": 4}'],
        ['atlas={"lo": 0.2, "max_work": null, "forensics": false}', "engine={'cap': 2.5}"],
    ],
)
def test_command_line_overrides_are_read_with_their_types(tmp_path, mirror, override):
    """Snakemake hands nested --config values over as strings: the schema's
    types are restored, so valid overrides are accepted."""
    p = snakemake(tmp_path, "-n", "all", "--config", *override, env={traces.MIRROR_ENV: mirror})
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


def test_workflow_reports_bad_config(tmp_path):
    p = snakemake(tmp_path, "-n", "--config", "traces=[resnet32,gpt]")
    assert p.returncode != 0
    assert "invalid configuration: config key 'traces.1'" in p.stdout + p.stderr


def test_config_hash_ignores_machine_local_keys(schema):
    a = dtrlab_config.validate({}, schema)
    b = dtrlab_config.validate({"artifact": {"mirror": "/somewhere/logs.zip"}, "simrd": {"path": "/x"}}, schema)
    c = dtrlab_config.validate({"engine": {"cap": 2.0}}, schema)
    assert dtrlab_config.config_hash(a) == dtrlab_config.config_hash(b) != dtrlab_config.config_hash(c)


def test_dry_run_resolves_the_whole_dag(tmp_path, mirror):
    p = snakemake(tmp_path, "-n", "all", env={traces.MIRROR_ENV: mirror})
    assert p.returncode == 0, p.stderr
    out = p.stdout + p.stderr
    for rule in ("fetch_traces", "baseline", "baselines", "manifest", "all"):
        assert rule in out


def test_tampered_download_is_rejected_and_leaves_nothing(tmp_path, mirror):
    data = bytearray(Path(mirror).read_bytes())
    data[100] ^= 0x01
    tampered = tmp_path / "tampered.zip"
    tampered.write_bytes(bytes(data))
    work = tmp_path / "work"
    p = snakemake(work, "fetch_traces", "--config", "artifact={'url': 'file:///nonexistent/logs.zip'}",
                  env={traces.MIRROR_ENV: str(tampered)})
    assert p.returncode != 0
    log = (work / "results/logs/fetch_traces.log").read_text()
    assert "does not match the pinned" in log
    data_dir = work / "data/traces"
    assert not data_dir.exists() or not [f for f in data_dir.iterdir() if not f.name.startswith(".")]


def test_traces_without_provenance_are_fetched_again_not_adopted(tmp_path, mirror):
    """The failure of issue 11: traces put into data/traces by something other
    than the workflow (an older dtrlab's default folder) made `all` fail in
    its last job, the manifest, after every other job had run."""
    work = tmp_path / "work"
    foreign = traces.extract_traces(mirror, work / "data/traces")
    shutil.copyfile(mirror, work / "data/traces/logs.zip")
    assert provenance.unrecorded([*foreign.values()]) == sorted(map(str, foreign.values()))
    plan = snakemake(work, "-n", "all", *small(work), env={traces.MIRROR_ENV: mirror})
    assert plan.returncode == 0, plan.stderr
    assert "fetch_traces" in plan.stdout.split("Job stats:")[1].split("total")[0]
    p = snakemake(work, "fetch_traces", *small(work), env={traces.MIRROR_ENV: mirror})
    assert p.returncode == 0, p.stderr
    assert provenance.unrecorded([*foreign.values(), work / "data/traces/logs.zip"]) == []
    # What the manifest rule does with them now succeeds.
    m = make_manifest(work / "m.json", "x", foreign.values(), root=work)
    assert {a["rule"] for a in m["artifacts"]} == {"fetch_traces"}


def test_a_result_no_rule_produced_is_refused_at_the_start(tmp_path, mirror):
    work = tmp_path / "work"
    stray = work / "results/baselines/resnet32.json"
    stray.parent.mkdir(parents=True)
    stray.write_text("{}\n")
    p = snakemake(work, "-n", "all", *small(work), env={traces.MIRROR_ENV: mirror})
    assert p.returncode != 0
    out = p.stdout + p.stderr
    assert "results/baselines/resnet32.json: present but not produced by a workflow rule" in out, out[-3000:]
    assert "Job stats" not in out  # refused while the DAG was built: nothing planned, nothing run


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, mirror) -> Path:
    work = tmp_path_factory.mktemp("run1")
    p = snakemake(work, "all", *small(work), env={traces.MIRROR_ENV: mirror})
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return work


def test_small_target_end_to_end_and_manifest_verifies(small_run):
    manifest = json.loads((small_run / "results/MANIFEST.json").read_text())
    paths = {a["path"]: a for a in manifest["artifacts"]}
    assert "results/baselines/resnet32.json" in paths and "results/baselines/baselines.parquet" in paths
    assert paths["results/baselines/resnet32.json"]["rule"] == "baseline"
    assert json.loads((small_run / "results/baselines/resnet32.json").read_text())["peak"] == 10_061_179_648
    assert manifest["engine_version"] and manifest["packages"]["python"]
    assert provenance.verify(small_run / "results/MANIFEST.json") == []
    p = subprocess.run([sys.executable, "-m", "dtrlab", "verify", str(small_run / "results/MANIFEST.json")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_the_same_archive_from_another_mirror_reruns_nothing(small_run, mirror, tmp_path):
    """Where the pinned archive comes from is not an input of the study."""
    other = tmp_path / "elsewhere" / "logs.zip"
    other.parent.mkdir()
    shutil.copyfile(mirror, other)
    p = snakemake(small_run, "-n", "all", *small(small_run), env={traces.MIRROR_ENV: str(other)})
    assert p.returncode == 0, p.stderr
    assert "Nothing to be done" in p.stdout + p.stderr, p.stdout[-4000:]


def test_verify_detects_a_changed_artifact(small_run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(small_run / "results", copy / "results")
    shutil.copytree(small_run / "data", copy / "data")
    target = copy / "results/baselines/unet.json"
    target.write_text(target.read_text().replace("8415764928", "8415764929"))
    p = subprocess.run([sys.executable, "-m", "dtrlab", "verify", str(copy / "results/MANIFEST.json")],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "results/baselines/unet.json" in p.stderr


def test_hashed_artifacts_are_free_of_absolute_paths(small_run):
    manifest = json.loads((small_run / "results/MANIFEST.json").read_text())
    for a in manifest["artifacts"]:
        if a["path"].endswith((".json", ".csv")):
            assert str(small_run) not in (small_run / a["path"]).read_text()
    assert str(small_run) not in (small_run / "results/MANIFEST.json").read_text()


def test_two_runs_give_byte_identical_artifacts(small_run, tmp_path, mirror):
    work = tmp_path / "run2"
    p = snakemake(work, "all", *small(work), env={traces.MIRROR_ENV: mirror})
    assert p.returncode == 0, p.stderr
    ours, theirs = work / "results/MANIFEST.json", small_run / "results/MANIFEST.json"
    first, second = json.loads(ours.read_text()), json.loads(theirs.read_text())
    assert {k: v for k, v in first.items() if k != "artifacts"} == {k: v for k, v in second.items() if k != "artifacts"}
    comparisons = provenance.compare(ours, theirs)
    assert all(c.status in ("identical", "differs") for c in comparisons)  # the same artifacts
    # Every data artifact byte for byte; only what was measured (the real
    # runtime's times and bytes) and what renders it may differ.
    assert [c.path for c in comparisons if c.kind == "data" and c.status != "identical"] == []
    assert all(c.acceptable for c in comparisons)
    # Provenance too: an entry differs only where it names a measurement.
    a = {e["path"]: e for e in first["artifacts"]}
    b = {e["path"]: e for e in second["artifacts"]}
    for path in a:
        if a[path] != b[path]:
            assert provenance.Comparison(path, "differs").kind != "data" or any(
                provenance.Comparison(i, "differs").measurement for i in a[path].get("inputs", {})), path


def test_interrupted_run_resumes_without_recomputing(tmp_path, mirror):
    work = tmp_path / "resume"
    env = {traces.MIRROR_ENV: mirror}
    # A run that stopped after one baseline: only that artifact exists.
    p = snakemake(work, "results/baselines/resnet32.json", *small(work), env=env)
    assert p.returncode == 0, p.stderr
    done = work / "results/baselines/resnet32.json"
    before = (done.stat().st_mtime_ns, done.read_bytes())
    plan = snakemake(work, "-n", "all", *small(work), env=env)
    stats = plan.stdout.split("Job stats:")[1].split("total")[0]
    assert "fetch_traces" not in stats  # the download is finished
    assert " baseline " in stats.replace("\n", " ")  # unet's baseline is still to do
    p = snakemake(work, "all", *small(work), env=env)
    assert p.returncode == 0, p.stderr
    assert (done.stat().st_mtime_ns, done.read_bytes()) == before
    assert provenance.verify(work / "results/MANIFEST.json") == []


def test_workflow_is_lint_and_format_clean(tmp_path):
    # --directory: linting creates .snakemake/, which belongs in no checkout.
    lint = subprocess.run([sys.executable, "-m", "snakemake", "--lint", "--snakefile", str(REPO / "Snakefile"),
                           "--directory", str(tmp_path)], capture_output=True, text=True, timeout=300)
    out = lint.stdout + lint.stderr
    # One environment runs every rule (make setup's venv, or environment.yml's
    # conda env, with dtrlab installed): the Snakefile imports dtrlab while it
    # is parsed, so per-rule environments could not stand alone, and conda-forge
    # is not reachable where the tests run. Snakemake's advice to give each rule
    # its own environment is therefore the one lint accepted; any other fails.
    titles = {line.strip()[2:].rstrip(":") for line in out.splitlines() if line.startswith("    * ")}
    assert titles <= {"Specify a conda environment or container for each rule."}, out
    # Snakemake exits 1 when it prints lints, 0 with "good condition" otherwise.
    assert (lint.returncode, bool(titles)) == (1, True) or (lint.returncode == 0 and "good condition" in out), out
    snakefmt = shutil.which("snakefmt", path=str(Path(sys.executable).parent)) or shutil.which("snakefmt")
    if snakefmt is None:
        pytest.skip("snakefmt not installed")
    fmt = subprocess.run([snakefmt, "--check", "."], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert fmt.returncode == 0, fmt.stderr


def test_configuration_never_reaches_a_shell_unquoted(tmp_path, mirror):
    """Strings from the configuration (a URL, folders) are data, not commands;
    and folders with a space work. (Folders with shell metacharacters, and
    heuristics outside the engine's names, are refused by the schema: see
    test_schema_rejects_bad_config_naming_the_key.)"""
    work = tmp_path / "work"
    config = write_reduced_config(
        work.parent,
        data_dir="my data/traces",
        results_dir="my results",
        artifact={"url": "file:///nonexistent/$(touch PWNED_url)/logs.zip"},
    )
    env = {traces.MIRROR_ENV: mirror}
    p = snakemake(work, "my results/baselines/resnet32.json", "my results/sweeps/resnet32_dtr/chunk-000.parquet",
                  "--configfile", str(config), env=env)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert json.loads((work / "my results/baselines/resnet32.json").read_text())["peak"] == 10_061_179_648
    assert not [f for f in tmp_path.rglob("PWNED*")]


def test_citation_and_licence_agree_with_the_package():
    """CITATION.cff and LICENSE exist and say what pyproject.toml says."""
    import re

    project = (REPO / "pyproject.toml").read_text()
    version = re.search(r'^version = "([^"]+)"', project, re.M).group(1)
    licence = re.search(r'^license = \{ text = "([^"]+)" \}', project, re.M).group(1)
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["version"] == version
    assert cff["license"] == licence == "MIT"
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    assert any(r["title"].startswith("Deterministic Regime Switching") for r in cff["references"])


def test_the_snakefile_states_the_snakemake_it_needs():
    import re

    project = (REPO / "pyproject.toml").read_text()
    assert re.search(r'"snakemake>=9,<10"', project)
    assert 'min_version("9.0")' in (REPO / "Snakefile").read_text()
    assert "snakemake-minimal>=9,<10" in (REPO / "environment.yml").read_text()


def _lock() -> dict[str, str]:
    from packaging.utils import canonicalize_name

    pins = {}
    for line in (REPO / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def test_the_lock_pins_every_dependency_within_the_declared_bounds():
    """requirements.lock (what make setup installs) satisfies pyproject.toml's
    dependencies and the extras make setup asks for; the conda files declare
    the same bounds for the data libraries."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = _lock()
    wanted = project["dependencies"] + [r for e in ("test", "workflow", "notebooks", "slurm", "capture")
                                        for r in project["optional-dependencies"][e]]
    for spec in wanted:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        assert name in pins, f"{name} is not in requirements.lock"
        assert req.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} outside {req.specifier}"
    assert "dtrlab" not in pins
    for env in ("environment.yml", ".binder/environment.yml"):
        text = (REPO / env).read_text()
        assert "numpy>=2,<3" in text and "pandas>=3,<4" in text, env
    assert "-c requirements.lock" in (REPO / "Makefile").read_text()


def test_no_rule_declares_an_environment_it_could_not_build():
    """`--use-conda` would build environment.yml once per rule from a copy under
    .snakemake/conda/, where its `-e .` line no longer names this checkout; so
    no rule declares one (see docs/WORKFLOW.md, "Environments")."""
    rules = sorted((REPO / "workflow" / "rules").glob("*.smk")) + [REPO / "Snakefile"]
    offenders = [p.name for p in rules if re.search(r"^\s+(conda|container):", p.read_text(), re.M)]
    assert rules and not offenders, offenders


def test_the_dev_container_sets_path_where_the_container_env_is_known():
    """`${containerEnv:...}` is substituted only after the container exists:
    in `containerEnv` (passed to `docker run`) PATH would lose /usr/bin."""
    spec = json.loads((REPO / ".devcontainer" / "devcontainer.json").read_text())
    assert not any("${containerEnv:" in v for v in spec.get("containerEnv", {}).values())
    path = spec["remoteEnv"]["PATH"]
    assert path.startswith("${containerWorkspaceFolder}/.venv/bin:") and path.endswith("${containerEnv:PATH}")


def test_binder_and_the_dev_container_run_what_exists_here():
    """The commands the launchers run exist and agree with the Makefile: the
    dev container's `make setup` target and venv, Binder's install, its
    kernel (the name the figure notebooks ask for) and its one-off fetch of
    the traces into the folder the notebooks read (a `dtrlab fetch` command)."""
    import shlex

    from dtrlab import cli

    makefile = (REPO / "Makefile").read_text()
    spec = json.loads((REPO / ".devcontainer" / "devcontainer.json").read_text())
    target = shlex.split(spec["postCreateCommand"])
    assert target[0] == "make" and re.search(rf"^{target[1]}:", makefile, re.M)
    venv = re.search(r"^VENV \?= (\S+)$", makefile, re.M).group(1)
    assert spec["remoteEnv"]["PATH"].startswith(f"${{containerWorkspaceFolder}}/{venv}/bin:")
    assert "3.11" in spec["image"]

    post = [shlex.split(line) for line in (REPO / ".binder" / "postBuild").read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#") and not line.startswith("set ")]
    commands = [c[c.index("-m") + 1:] for c in post if c[:2] == ["python", "-m"]]
    assert ["pip", "install", "--no-build-isolation", "--no-deps", "-e", "."] in commands
    kernel = next(c for c in commands if c[:2] == ["ipykernel", "install"])
    name = kernel[kernel.index("--name") + 1]
    assert f"--name {name}" in makefile
    for nb in ("lstm_regimes", "resnet_inversion", "ablation"):
        assert json.loads((REPO / f"notebooks/{nb}.ipynb").read_text())["metadata"]["kernelspec"]["name"] == name
    fetch = next(c for c in commands if c[0] == "dtrlab")
    cli.build_parser().parse_args(fetch[1:])  # a real subcommand (SystemExit otherwise)
    assert fetch[1:] == ["fetch"]  # no --dest: the per-user cache load_trace reads
    # Binder's conda environment has what `import dtrlab` needs (--no-deps above).
    env = yaml.safe_load((REPO / ".binder" / "environment.yml").read_text())["dependencies"]
    names = {re.split(r"[<>=]", d)[0] for d in env if isinstance(d, str)}  # conda specs ("python=3.11")
    import tomllib

    from packaging.requirements import Requirement

    core = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert {Requirement(d).name for d in core} <= names, names


def test_hosted_ci_runs_what_the_local_ci_runs():
    """The hosted workflow runs .ci/run, which runs the README's two commands."""
    spec = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())
    steps = spec["jobs"]["test-and-run"]["steps"]
    assert [s["run"] for s in steps if "run" in s] == ["bash .ci/run"]
    assert any(s.get("with", {}).get("python-version") == "3.11" for s in steps)
    local = (REPO / ".ci" / "run").read_text()
    assert "make test\n" in local and "make run CONFIG=config/reduced.yaml" in local
    assert "scripts/slurm-local.sh up" in local and "scripts/slurm-local.sh down" in local


def test_the_slurm_profile_lets_threads_set_cpus_and_fetches_locally():
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    assert profile["executor"] == "slurm"
    assert "cpus_per_task" not in profile["default-resources"]
    data_rules = (REPO / "workflow" / "rules" / "data.smk").read_text()
    assert "localrules:\n    fetch_traces," in data_rules


def test_the_reference_manifest_is_a_run_of_the_shipped_configuration():
    """reference/MANIFEST.json (for `dtrlab verify --against`) stays in step
    with the shipped configuration, and names files inside the workflow only."""
    ref = provenance.read_manifest(REPO / "reference" / "MANIFEST.json")
    shipped = dtrlab_config.load(REPO / "config/config.yaml")
    assert ref["config_sha256"] == dtrlab_config.config_hash(shipped)
    paths = [Path(e["path"]) for e in ref["artifacts"]]
    assert all(not p.is_absolute() and ".." not in p.parts for p in paths)
    assert Path("results/paper/main.pdf") in paths and len(paths) == len(set(paths)) > 100


def test_every_rule_that_reads_a_trace_is_told_how_to_parse_it():
    """config engine.start and engine.name reach every step that reads a
    trace (input ``trace``/``traces``), not only the baselines."""
    blocks = rule_blocks()
    inputs = {name: re.search(r"^    input:\n((?:        .*\n|            .*\n)*)", body + "\n", re.M)
              for name, body in blocks.items()}
    readers = {name: blocks[name] for name, m in inputs.items() if m and re.search(r"^        traces?=", m.group(1), re.M)}
    assert {"baseline", "sweep_chunk", "c2_reeviction", "c4_forensics", "c6_determinism", "atlas_chunk",
            "atlas_trace"} <= set(readers)
    for name, body in readers.items():
        assert "        start=START," in body and "        engine=ENGINE," in body, name


def rule_blocks() -> dict[str, str]:
    """Each rule of the workflow's files -> its text."""
    text = "\n".join(p.read_text() for p in sorted((REPO / "workflow/rules").glob("*.smk")))
    parts = re.split(r"^rule (\w+):\n", text, flags=re.M)
    return {parts[i]: parts[i + 1].split("\n\n\n")[0] for i in range(1, len(parts), 2)}
