# Configuration validated against the schema (defaults filled in), and the
# paths every rule shares.
import os

import yaml

from dtrlab import config as dtrlab_config
from dtrlab.traces import TRACE_FILES, MIRROR_ENV, default_mirror

with open(workflow.source_path("../schemas/config.schema.yaml")) as _f:
    _schema = yaml.safe_load(_f)
try:
    config = dtrlab_config.validate(config, _schema)
except dtrlab_config.ConfigError as e:
    raise WorkflowError(f"invalid configuration: {e}")

CONFIG_SHA256 = dtrlab_config.config_hash(config)
DATA = config["data_dir"]
RESULTS = config["results_dir"]
TRACES = config["traces"]
# The environment wins over the config; else a sibling shared/ copy if present.
MIRROR = os.environ.get(MIRROR_ENV) or config["artifact"]["mirror"] or default_mirror()


def trace_file(key):
    """Verified trace file of a trace key."""
    return f"{DATA}/{TRACE_FILES[key]}"


def trace_input(wildcards):
    return trace_file(wildcards.trace)


# The software environment of every rule (for --use-conda).
ENV = "../../environment.yml"

# Every hashed artifact, by topic; the manifest rule hashes them all.
ARTIFACTS = {}
