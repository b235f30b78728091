"""Unpacking the reference simulator's archive: only its package, and never
a member that points outside the destination."""

from __future__ import annotations

import io
import os
import tarfile

import pytest

from dtrlab import reference
from dtrlab.exceptions import ReferenceUnavailable


def _archive(path, members: dict[str, bytes]) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


FAKE = {"simrd/__init__.py": b"# package\n", "simrd/runtime/x.py": b"X = 1\n"}


def test_the_package_is_unpacked_alone(tmp_path):
    src = _archive(tmp_path / "ok.tar.gz", {**{f"top/simrd/{k}": v for k, v in FAKE.items()},
                                            "top/README.md": b"not this\n"})
    dest = tmp_path / "dest"
    reference.fetch(dest, url=src, package_sha256=reference.package_digest(list(FAKE.items())))
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "simrd/__init__.py", "simrd/runtime/x.py"]


@pytest.mark.parametrize("evil", ["top/simrd/simrd/../../../../evil.py", "/tmp/evil.py", "../evil.py"])
def test_a_member_outside_the_destination_refuses_the_archive(tmp_path, evil):
    src = _archive(tmp_path / "evil.tar.gz", {"top/simrd/simrd/__init__.py": b"# package\n", evil: b"pwned\n"})
    dest = tmp_path / "a" / "b" / "dest"
    with pytest.raises(ReferenceUnavailable, match="points outside the archive; nothing was written"):
        reference.fetch(dest, url=src)
    assert not dest.exists()
    assert not list(tmp_path.rglob("evil.py"))


def test_a_package_other_than_the_pinned_one_is_refused(tmp_path):
    """The pinned digest is simrd's at the pinned commit: a changed file is refused before any write."""
    src = _archive(tmp_path / "other.tar.gz", {f"top/simrd/{k}": v for k, v in FAKE.items()})
    dest = tmp_path / "dest"
    with pytest.raises(ReferenceUnavailable, match="the simrd package's digest is [0-9a-f]{64}, expected "
                                                   + reference.SIMRD_PACKAGE_SHA256):
        reference.fetch(dest, url=src)
    assert not dest.exists()


@pytest.mark.skipif(not os.environ.get(reference.SIMRD_ENV), reason="DTRLAB_SIMRD not set")
def test_the_pin_is_the_configured_reference():
    """The checkout the live tests use is the pinned package, file for file."""
    root = reference.locate()
    files = [(p.relative_to(root).as_posix(), p.read_bytes()) for p in (root / "simrd").rglob("*.py")]
    assert reference.package_digest(files) == reference.SIMRD_PACKAGE_SHA256
