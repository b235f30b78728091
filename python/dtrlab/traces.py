"""The public DTR traces: where they come from, how they are verified, where
they live, and the trace keys used everywhere (``lstm``, ``resnet32``, ...).

The archive is ``simrd/logs.zip`` of ``uwsampl/dtr-prototype`` at a pinned
commit. It is downloaded (or copied from a local mirror), checked against the
pinned sha256, and each extracted trace is checked again. Nothing is written
unless every check passes.
"""

from __future__ import annotations

import hashlib
import os
import time
import urllib.request
import zipfile
import zlib
from pathlib import Path

from dtrlab.atomic import write_bytes
from dtrlab.config import defaults
from dtrlab.exceptions import ChecksumError, DownloadError

ARTIFACT_COMMIT = "eff53cc4804cc7d6246a6e5086861ce2b846f62b"
ARTIFACT_URL = f"https://github.com/uwsampl/dtr-prototype/raw/{ARTIFACT_COMMIT}/simrd/logs.zip"
ARTIFACT_SHA256 = "63579a07a6e7ce063f5ba49450dfb96a9f3995df736c423c27e1336f4365e02a"

#: trace key -> file name inside the archive's ``logs/`` folder.
TRACE_FILES: dict[str, str] = {
    "densenet": "tv_densenet121-84-10000000000.0-2020-10-1-13-41-18-default.log",
    "inception": "inceptionv4-64-10000000000.0-2020-10-1-10-55-0-default.log",
    "lstm": "lstm-128-11000000000.0-2020-10-1-16-38-52-default.log",
    "resnet32": "resnet32-56-9000000000.0-2020-10-1-13-3-30-default.log",
    "transformer": "transformer-10-8000000000.0-2020-10-1-10-56-5-default.log",
    "treelstm": "treelstm-6-8000000000.0-2020-10-1-12-54-1-default.log",
    "unet": "unet-6-8000000000.0-2020-10-1-10-57-18-default.log",
    "unroll_gan": "unroll_gan-512-10000000000.0-2020-10-1-18-43-42-default.log",
}

#: sha256 of every extracted file (from the artifact's SHA256SUMS).
FILE_SHA256: dict[str, str] = {
    TRACE_FILES["inception"]: "439a2b9a7a080faabfbc2c751d66d2838664882e3b603196d1c2f41ac64ee9df",
    TRACE_FILES["lstm"]: "f17c569c87bcd1368cc1d1eb0ad79cc75ac8eea0985755c6cd437d7faff2a31f",
    TRACE_FILES["resnet32"]: "38c94cada99aca654ad9589d99eabc2267a51835593b598085f9f8221a7bacaf",
    TRACE_FILES["transformer"]: "cdcac0e9f4af95ccf30cacb28f9edcc2f194c31653946f9ddde424f926fcb7d1",
    TRACE_FILES["treelstm"]: "4ec05ef5a1bd81a0c47a4eb13fa708e015333c2568c26f8cdfa1e8c9f2de5902",
    TRACE_FILES["densenet"]: "4d9e8bd06f6b76c894dfbef4743f714177665dee9e883aa245c2770fe48e45de",
    TRACE_FILES["unet"]: "cf985d2ca964c89988e931ee1978302deb22ffb17bc518da0f39344b66d23476",
    TRACE_FILES["unroll_gan"]: "0947d26a48e6677b6d437b1415245aa7bb1c638207e8420e4a1e52a094137120",
    "manifest.json": "9b974993063a9fff7b32b25af5b1dd7960d3e60a6814a7829ed1ae6c2a0d7fa4",
}

TRACE_KEYS = tuple(TRACE_FILES)

#: Sizes in bytes of the archive and of every file in it: nothing larger is
#: ever read (a wrong source, or a zip bomb, stops at the bound, not at
#: MemoryError).
ARTIFACT_BYTES = 1_019_528
FILE_BYTES: dict[str, int] = {
    TRACE_FILES["inception"]: 939_105,
    TRACE_FILES["lstm"]: 2_790_523,
    TRACE_FILES["resnet32"]: 201_728,
    TRACE_FILES["transformer"]: 1_060_761,
    TRACE_FILES["treelstm"]: 2_408_734,
    TRACE_FILES["densenet"]: 1_075_231,
    TRACE_FILES["unet"]: 142_119,
    TRACE_FILES["unroll_gan"]: 1_947_904,
    "manifest.json": 1_744,
}

#: Environment variables: a local copy of logs.zip (path or URL), and the
#: folder holding extracted traces.
MIRROR_ENV = "DTRLAB_ARTIFACT_MIRROR"
DATA_ENV = "DTRLAB_DATA"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def default_mirror() -> str | None:
    """The mirror from the environment, else the workplace's shared copy if present."""
    env = os.environ.get(MIRROR_ENV)
    if env:
        return env
    for base in (Path.cwd(), Path(__file__).resolve().parents[2]):
        candidate = base.parent / "shared" / "dtr-artifact" / "logs.zip"
        if candidate.is_file():
            return str(candidate)
    return None


def cache_dir() -> Path:
    """dtrlab's per-user cache (``~/.cache/dtrlab`` on Linux)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("dtrlab"))


def default_data_dir() -> Path:
    """Where the API and the CLI keep the traces: ``$DTRLAB_DATA``, else the
    per-user cache (``~/.cache/dtrlab/traces`` on Linux). Never a folder of
    the checkout: ``data/`` belongs to the workflow, which records the
    provenance of everything it puts there."""
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else cache_dir() / "traces"


def _read_source(source: str, retries: int, timeout: float, limit: int) -> bytes:
    """Bytes of a local path, a file:// URL or an http(s) URL (with retries);
    more than ``limit`` bytes is a :class:`ChecksumError` (read no further)."""
    def bounded(stream) -> bytes:
        data = stream.read(limit + 1)
        if len(data) > limit:
            raise ChecksumError(f"{source} holds more than the {limit:,} bytes expected; nothing was written")
        return data

    if "://" not in source:
        path = Path(source)
        if not path.is_file():
            raise DownloadError(f"mirror {source} does not exist")
        with open(path, "rb") as f:
            return bounded(f)
    last: Exception | None = None
    for attempt in range(retries):
        try:
            with urllib.request.urlopen(source, timeout=timeout) as r:
                return bounded(r)
        except OSError as e:  # URLError is an OSError
            last = e
            time.sleep(min(2**attempt, 10))
    raise DownloadError(f"could not download {source} after {retries} attempts: {last}")


#: Attempts per download source (the schema's artifact.retries).
DEFAULT_RETRIES: int = defaults()["artifact"]["retries"]


def fetch_archive(
    dest: str | os.PathLike,
    mirror: str | None = None,
    url: str = ARTIFACT_URL,
    sha256: str = ARTIFACT_SHA256,
    retries: int | None = None,
    timeout: float = 60.0,
) -> Path:
    """Obtain logs.zip (mirror first, then the URL), verify, write atomically.

    A checksum mismatch raises :class:`ChecksumError` and writes nothing.
    """
    dest = Path(dest)
    retries = DEFAULT_RETRIES if retries is None else retries
    sources = [s for s in (mirror, url) if s]
    errors = []
    for source in sources:
        try:
            data = _read_source(source, retries, timeout, limit=ARTIFACT_BYTES)
        except DownloadError as e:
            errors.append(str(e))
            continue
        digest = sha256_bytes(data)
        if digest != sha256:
            raise ChecksumError(
                f"{source}: sha256 {digest} does not match the pinned {sha256}; nothing was written"
            )
        write_bytes(dest, data)
        return dest
    raise DownloadError("no source for the trace archive worked: " + "; ".join(errors))


def extract_traces(archive: str | os.PathLike, out_dir: str | os.PathLike) -> dict[str, Path]:
    """Extract and verify every trace; returns key -> path.

    All files are read and checked in memory first: a single mismatch raises
    :class:`ChecksumError` before any file is written.
    """
    out_dir = Path(out_dir)
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as e:
        raise ChecksumError(f"{archive} is not a valid zip archive ({e}); nothing was written") from e
    with zf:
        contents: dict[str, bytes] = {}
        for name, expected in FILE_SHA256.items():
            try:
                # Streamed and bounded: a member inflating past its pinned size
                # (a zip bomb) is refused at the bound.
                with zf.open(f"logs/{name}") as member:
                    data = member.read(FILE_BYTES[name] + 1)
                if len(data) > FILE_BYTES[name]:
                    raise ChecksumError(f"{archive}: logs/{name} is larger than the pinned "
                                        f"{FILE_BYTES[name]:,} bytes; nothing was written")
            except KeyError as e:
                raise ChecksumError(f"{archive} lacks logs/{name}; nothing was written") from e
            except (zipfile.BadZipFile, zlib.error) as e:
                raise ChecksumError(f"{archive}: logs/{name} is corrupt ({e}); nothing was written") from e
            digest = sha256_bytes(data)
            if digest != expected:
                raise ChecksumError(
                    f"{archive}: logs/{name} has sha256 {digest}, expected {expected}; nothing was written"
                )
            contents[name] = data
    for name, data in contents.items():
        write_bytes(out_dir / name, data)
    return {key: out_dir / f for key, f in TRACE_FILES.items()}


def traces_present(data_dir: str | os.PathLike) -> bool:
    """True if every trace exists with the pinned sha256."""
    data_dir = Path(data_dir)
    for name, expected in FILE_SHA256.items():
        p = data_dir / name
        if not p.is_file() or sha256_file(p) != expected:
            return False
    return True


#: Folders verified in this process (hashing ~10 MB per trace lookup is wasteful).
_VERIFIED: set[Path] = set()


def ensure_traces(data_dir: str | os.PathLike | None = None, mirror: str | None = None) -> Path:
    """Make sure the verified traces are in ``data_dir`` (fetching if needed)."""
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    if data_dir.resolve() in _VERIFIED or traces_present(data_dir):
        _VERIFIED.add(data_dir.resolve())
        return data_dir
    archive = data_dir / "logs.zip"
    if not (archive.is_file() and sha256_file(archive) == ARTIFACT_SHA256):
        fetch_archive(archive, mirror=mirror or default_mirror())
    extract_traces(archive, data_dir)
    _VERIFIED.add(data_dir.resolve())
    return data_dir


def resolve_trace(name: str | os.PathLike, data_dir: str | os.PathLike | None = None) -> Path:
    """A trace key (``lstm``) -> its verified file; any other value is a path."""
    if str(name) in TRACE_FILES:
        return ensure_traces(data_dir) / TRACE_FILES[str(name)]
    path = Path(name)
    if not path.is_file():
        keys = ", ".join(TRACE_KEYS)
        raise FileNotFoundError(f"{name}: no such trace file (or use a key: {keys})")
    return path
