"""Download, verification and extraction of the public traces."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from dtrlab import traces
from dtrlab.exceptions import ChecksumError, DownloadError


@pytest.fixture(scope="module")
def mirror():
    m = traces.default_mirror()
    if m is None:
        pytest.skip("no artifact mirror (set DTRLAB_ARTIFACT_MIRROR)")
    return m


def test_fetch_from_mirror_verifies_and_writes(tmp_path, mirror):
    dest = traces.fetch_archive(tmp_path / "logs.zip", mirror=mirror, url="")
    assert traces.sha256_file(dest) == traces.ARTIFACT_SHA256
    paths = traces.extract_traces(dest, tmp_path / "out")
    assert set(paths) == set(traces.TRACE_KEYS)
    for key, p in paths.items():
        assert traces.sha256_file(p) == traces.FILE_SHA256[traces.TRACE_FILES[key]]
    assert traces.traces_present(tmp_path / "out")


def test_tampered_archive_is_rejected_and_nothing_is_written(tmp_path, mirror):
    data = bytearray(open(mirror, "rb").read())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "tampered.zip"
    bad.write_bytes(bytes(data))
    out = tmp_path / "dest"
    with pytest.raises(ChecksumError, match="nothing was written"):
        traces.fetch_archive(out / "logs.zip", mirror=str(bad), url="")
    assert not out.exists() or not any(out.iterdir())


def test_truncated_archive_is_rejected_and_nothing_is_written(tmp_path, mirror):
    data = open(mirror, "rb").read()
    bad = tmp_path / "truncated.zip"
    bad.write_bytes(data[: len(data) // 3])
    out = tmp_path / "dest"
    with pytest.raises(ChecksumError):
        traces.fetch_archive(out / "logs.zip", mirror=str(bad), url="")
    with pytest.raises(ChecksumError):
        traces.extract_traces(bad, out)
    assert not out.exists() or not any(out.iterdir())


def test_extraction_checks_each_file(tmp_path, mirror):
    """An archive whose zip checksum we accept but with one trace altered."""
    src = zipfile.ZipFile(mirror)
    forged = tmp_path / "forged.zip"
    with zipfile.ZipFile(forged, "w") as z:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("unet-6-8000000000.0-2020-10-1-10-57-18-default.log"):
                data = data.replace(b'"TIME":', b'"TIMX":', 1)  # same size, other bytes
            z.writestr(info.filename, data)
    out = tmp_path / "out"
    with pytest.raises(ChecksumError, match="unet-6.*expected"):
        traces.extract_traces(forged, out)
    assert not out.exists() or not any(out.iterdir())


def test_unreachable_sources_are_a_download_error(tmp_path):
    with pytest.raises(DownloadError, match="no source"):
        traces.fetch_archive(tmp_path / "x.zip", mirror=str(tmp_path / "missing.zip"), url="", retries=1)
    assert not (tmp_path / "x.zip").exists()


def test_file_url_mirror(tmp_path, mirror):
    dest = traces.fetch_archive(tmp_path / "logs.zip", mirror=f"file://{mirror}", url="")
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == traces.ARTIFACT_SHA256


def test_resolve_trace_keys_and_paths(trace_dir, tmp_path):
    assert traces.resolve_trace("lstm", trace_dir).name == traces.TRACE_FILES["lstm"]
    with pytest.raises(FileNotFoundError, match="use a key"):
        traces.resolve_trace(tmp_path / "nope.log")


def test_the_default_trace_folder_is_outside_the_checkout(monkeypatch):
    """data/ belongs to the workflow: the API's traces go to the user cache,
    wherever the process runs (here: from the checkout's root)."""
    repo = Path(__file__).resolve().parents[1]
    monkeypatch.delenv(traces.DATA_ENV, raising=False)
    monkeypatch.chdir(repo)
    assert not traces.default_data_dir().resolve().is_relative_to(repo)
    monkeypatch.setenv(traces.DATA_ENV, "/somewhere/traces")
    assert traces.default_data_dir() == Path("/somewhere/traces")


def test_a_source_larger_than_the_archive_is_not_read_to_the_end(tmp_path):
    """A wrong mirror (here: an endless one) stops at the pinned size."""
    with pytest.raises(ChecksumError, match="holds more than the 1,019,528 bytes expected"):
        traces.fetch_archive(tmp_path / "logs.zip", mirror="file:///dev/zero", url="")
    big = tmp_path / "big.zip"
    big.write_bytes(b"\0" * (traces.ARTIFACT_BYTES + 1))
    with pytest.raises(ChecksumError, match="holds more than"):
        traces.fetch_archive(tmp_path / "logs.zip", mirror=str(big), url="")
    assert not (tmp_path / "logs.zip").exists()


def test_a_zip_bomb_is_refused_at_the_pinned_size(tmp_path):
    bomb = tmp_path / "bomb.zip"
    name = traces.TRACE_FILES["inception"]  # the first file checked
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"logs/{name}", b"\0" * (64 * 2**20))  # 64 MB from a few dozen KB
    assert bomb.stat().st_size < 2**20
    out = tmp_path / "out"
    with pytest.raises(ChecksumError, match="larger than the pinned 939,105 bytes; nothing was written"):
        traces.extract_traces(bomb, out)
    assert not out.exists()


def test_the_pinned_sizes_are_those_of_the_real_archive(mirror):
    with zipfile.ZipFile(mirror) as z:
        sizes = {i.filename.removeprefix("logs/"): i.file_size for i in z.infolist() if i.filename != "logs/"}
    assert sizes == traces.FILE_BYTES
    assert Path(mirror).stat().st_size == traces.ARTIFACT_BYTES
