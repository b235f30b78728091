"""Unpacking the reference simulator's archive: only its package, and never
a member that points outside the destination."""

from __future__ import annotations

import io
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


def test_the_package_is_unpacked_alone(tmp_path):
    src = _archive(tmp_path / "ok.tar.gz", {"top/simrd/simrd/__init__.py": b"# package\n",
                                            "top/simrd/simrd/runtime/x.py": b"X = 1\n",
                                            "top/README.md": b"not this\n"})
    dest = tmp_path / "dest"
    reference.fetch(dest, url=src)
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
