"""Downloads against a loopback HTTP server: full, resumed, retried, checksum mismatch, 404, parallel, mirror."""

from __future__ import annotations

import hashlib
import os

import pytest
from loopback import FileServer

from biastransfer.data.download import (
    ChecksumError,
    Download,
    DownloadError,
    apply_mirror,
    fetch,
    fetch_many,
    partial_path,
    sidecar_path,
)

BODY = os.urandom(300_000)
SHA = hashlib.sha256(BODY).hexdigest()
MD5 = hashlib.md5(BODY).hexdigest()


@pytest.fixture
def server():
    with FileServer({"/data/blob.bin": BODY}) as srv:
        yield srv


def test_full_download_verifies_published_sha256(server, tmp_path):
    out = fetch(f"{server.url}/data/blob.bin", tmp_path / "blob.bin", sha256=SHA, progress=False)
    assert out.read_bytes() == BODY
    assert not partial_path(out).exists()


def test_md5_and_recorded_sha256_sidecar(server, tmp_path):
    dest = tmp_path / "blob.bin"
    fetch(f"{server.url}/data/blob.bin", dest, md5=MD5, progress=False)
    assert sidecar_path(dest).read_text().split()[0] == SHA
    # a later call with no published checksum checks the file against the sidecar, without the network
    n = len(server.requests)
    fetch(f"{server.url}/data/blob.bin", dest, progress=False)
    assert len(server.requests) == n


def test_recorded_checksum_catches_a_changed_remote(server, tmp_path):
    dest = tmp_path / "blob.bin"
    fetch(f"{server.url}/data/blob.bin", dest, progress=False)
    dest.write_bytes(b"corrupted")  # local copy damaged, and the server now serves other bytes
    server.files["/data/blob.bin"] = b"something else"
    with pytest.raises(ChecksumError, match=f"expected {SHA}"):
        fetch(f"{server.url}/data/blob.bin", dest, progress=False, retries=0)
    assert not dest.exists() and not partial_path(dest).exists()


def test_interrupted_download_resumes_with_range(server, tmp_path):
    server.cut["/data/blob.bin"] = (100_000, 1)  # first response dies after 100 kB
    dest = tmp_path / "blob.bin"
    fetch(f"{server.url}/data/blob.bin", dest, sha256=SHA, progress=False, backoff=0)
    assert dest.read_bytes() == BODY
    assert server.requests == [("/data/blob.bin", None), ("/data/blob.bin", "bytes=100000-")]


def test_interrupted_run_leaves_partial_that_next_run_resumes(server, tmp_path):
    server.cut["/data/blob.bin"] = (50_000, 2)
    dest = tmp_path / "blob.bin"
    with pytest.raises(DownloadError, match="blob.bin: giving up after 2 attempts"):
        fetch(f"{server.url}/data/blob.bin", dest, sha256=SHA, progress=False, retries=1, backoff=0)
    assert not dest.exists()
    assert partial_path(dest).stat().st_size == 100_000  # two cut responses of 50 kB, appended
    fetch(f"{server.url}/data/blob.bin", dest, sha256=SHA, progress=False)
    assert dest.read_bytes() == BODY
    assert server.requests[-1] == ("/data/blob.bin", "bytes=100000-")


def test_server_errors_are_retried(server, tmp_path):
    server.fail["/data/blob.bin"] = 2
    fetch(f"{server.url}/data/blob.bin", tmp_path / "b", sha256=SHA, progress=False, backoff=0)
    assert len(server.requests) == 3


def test_checksum_mismatch_names_url_and_leaves_nothing(server, tmp_path):
    dest = tmp_path / "blob.bin"
    with pytest.raises(ChecksumError) as err:
        fetch(f"{server.url}/data/blob.bin", dest, sha256="0" * 64, progress=False)
    msg = str(err.value)
    assert "/data/blob.bin" in msg and "expected " + "0" * 64 in msg and f"got {SHA}" in msg
    assert list(tmp_path.iterdir()) == []


def test_404_is_not_retried_and_names_url(server, tmp_path):
    with pytest.raises(DownloadError, match=r"/missing\.bin: HTTP 404"):
        fetch(f"{server.url}/missing.bin", tmp_path / "m", progress=False, backoff=0)
    assert len(server.requests) == 1
    assert list(tmp_path.iterdir()) == []


def test_local_path_file_url_and_mirror(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "images.example.org" / "val").mkdir(parents=True)
    (mirror / "images.example.org" / "val" / "1.jpg").write_bytes(BODY)
    url = "http://images.example.org/val/1.jpg"
    assert apply_mirror(url, mirror) == str(mirror / "images.example.org/val/1.jpg")
    assert apply_mirror(url, "https://m.local/x/") == "https://m.local/x/images.example.org/val/1.jpg"
    out = fetch(url, tmp_path / "a.jpg", mirror=mirror, sha256=SHA, progress=False)  # no network used
    assert out.read_bytes() == BODY
    fetch(f"file://{out}", tmp_path / "b.jpg", sha256=SHA, progress=False)
    assert (tmp_path / "b.jpg").read_bytes() == BODY
    with pytest.raises(DownloadError, match="no such file"):
        fetch(tmp_path / "nope.jpg", tmp_path / "c.jpg", progress=False)


def test_fetch_many_parallel_and_failures(tmp_path):
    files = {f"/img/{i}.jpg": os.urandom(1000 + i) for i in range(40)}
    with FileServer(files) as srv:
        items = [Download(f"{srv.url}{p}", p.lstrip("/"), hashlib.sha256(b).hexdigest()) for p, b in files.items()]
        paths = fetch_many(items, tmp_path, workers=8)
        assert [p.read_bytes() for p in paths] == list(files.values())
        srv.files.pop("/img/3.jpg")
        (tmp_path / "img" / "3.jpg").unlink()
        with pytest.raises(DownloadError, match=r"(?s)1 of 41 downloads failed:.*3\.jpg: HTTP 404"):
            fetch_many(items + [f"{srv.url}/img/5.jpg"], tmp_path / "again", workers=4)
        assert (tmp_path / "again" / "5.jpg").read_bytes() == files["/img/5.jpg"]
