"""Tests of downloading: a local HTTP server on 127.0.0.1 only, never the internet."""

import bz2
import functools
import hashlib
import http.server
import os
import socket
import threading

import pytest

from vfl.core.errors import DataError
from vfl.datasets import (
    REGISTRY,
    DatasetSpec,
    FileSpec,
    catalog,
    fetch_dataset,
    fetch_file,
    find_file,
)

CONTENT = b"0123456789abcdef" * 10_000  # 160 kB: several read chunks


def sha(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    requests: list  # set per server

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_GET(self):
        self.requests.append(self.path)
        super().do_GET()


@pytest.fixture
def server(tmp_path):
    """Serve ``tmp_path / "www"`` on 127.0.0.1; yields (base_url, www_dir, requests)."""
    www = tmp_path / "www"
    www.mkdir()
    requests = []
    handler = type("Handler", (_QuietHandler,), {"requests": requests})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(www)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", www, requests
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture
def target(tmp_path):
    d = tmp_path / "data"  # does not exist yet: fetch must create it
    return d


def _contents(directory):
    return sorted(os.listdir(directory)) if directory.exists() else []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_fetch_file_success_with_progress(server, target):
    base, www, _ = server
    (www / "toy.bin").write_bytes(CONTENT)
    spec = FileSpec("toy.bin", base + "/toy.bin", sha(CONTENT), len(CONTENT))
    calls = []
    path = fetch_file(spec, target, progress=lambda done, total: calls.append((done, total)))
    assert path == target / "toy.bin"
    assert path.read_bytes() == CONTENT
    assert _contents(target) == ["toy.bin"]
    assert calls[0] == (0, len(CONTENT)) and calls[-1] == (len(CONTENT), len(CONTENT))
    assert [d for d, _ in calls] == sorted(d for d, _ in calls) and len(calls) > 2


def test_fetch_file_url_override_and_replace(server, target):
    base, www, _ = server
    (www / "elsewhere").write_bytes(CONTENT)
    target.mkdir()
    (target / "toy.bin").write_bytes(b"old and wrong")
    spec = FileSpec("toy.bin", "http://127.0.0.1:9/never-used", sha(CONTENT))
    fetch_file(spec, target, url=base + "/elsewhere")
    assert (target / "toy.bin").read_bytes() == CONTENT


def test_fetch_file_checksum_mismatch_leaves_nothing(server, target):
    base, www, _ = server
    corrupted = bytearray(CONTENT)
    corrupted[1234] ^= 1
    (www / "toy.bin").write_bytes(bytes(corrupted))
    url = base + "/toy.bin"
    spec = FileSpec("toy.bin", url, sha(CONTENT))
    with pytest.raises(DataError) as err:
        fetch_file(spec, target)
    msg = str(err.value)
    assert "toy.bin" in msg and url in msg
    assert sha(CONTENT) in msg and sha(bytes(corrupted)) in msg
    assert _contents(target) == []


def test_fetch_file_404(server, target):
    base, _, _ = server
    spec = FileSpec("missing.bin", base + "/missing.bin", sha(b""))
    with pytest.raises(DataError, match=r"download of .*/missing.bin failed: HTTP 404") as err:
        fetch_file(spec, target)
    assert "\n" not in str(err.value)
    assert _contents(target) == []


def test_fetch_file_connection_refused(target):
    url = f"http://127.0.0.1:{_closed_port()}/toy.bin"
    spec = FileSpec("toy.bin", url, sha(CONTENT))
    with pytest.raises(DataError, match="download of .* failed: .*[Rr]efused"):
        fetch_file(spec, target, timeout=5)
    assert _contents(target) == []


def test_fetch_file_interrupted_leaves_nothing(server, target):
    base, www, _ = server
    (www / "toy.bin").write_bytes(CONTENT)
    spec = FileSpec("toy.bin", base + "/toy.bin", sha(CONTENT))

    def interrupt(done, total):
        if done > 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fetch_file(spec, target, progress=interrupt)
    assert _contents(target) == []


def test_fetch_file_bad_url_and_unwritable_dir(tmp_path):
    spec = FileSpec("toy.bin", "not-a-url", sha(CONTENT))
    with pytest.raises(DataError, match="download of not-a-url failed"):
        fetch_file(spec, tmp_path / "d")
    assert _contents(tmp_path / "d") == []
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(DataError, match="cannot write toy.bin to"):
        fetch_file(spec, tmp_path / "file")


def test_fetch_file_cannot_replace_target(server, target):
    base, www, _ = server
    (www / "toy.bin").write_bytes(CONTENT)
    (target / "toy.bin").mkdir(parents=True)  # a directory is in the way
    spec = FileSpec("toy.bin", base + "/toy.bin", sha(CONTENT))
    with pytest.raises(DataError, match="cannot write .*toy.bin"):
        fetch_file(spec, target)
    assert _contents(target) == ["toy.bin"]


@pytest.fixture
def toy_dataset(monkeypatch, server):
    """A two-file dataset registered for the test, served by ``server``."""
    base, www, requests = server
    files = {"one.txt": b"first file\n" * 100, "two.txt": b"second file\n" * 200}
    for name, content in files.items():
        (www / "mirror" / name).parent.mkdir(exist_ok=True)
        (www / "mirror" / name).write_bytes(content)
    spec = DatasetSpec(
        name="toy",
        description="toy",
        n_train=1,
        n_test=1,
        n_features=1,
        files=tuple(FileSpec(n, "http://127.0.0.1:9/official/" + n, sha(c), len(c)) for n, c in files.items()),
    )
    monkeypatch.setitem(catalog.REGISTRY, "toy", spec)
    return spec, base + "/mirror/", files, requests


def test_fetch_dataset_mirror_skip_and_force(toy_dataset, target):
    spec, mirror, files, requests = toy_dataset
    seen = []
    paths = fetch_dataset("toy", target, mirror=mirror, progress=lambda name, done, total: seen.append(name))
    assert paths == [target / "one.txt", target / "two.txt"]
    assert [p.read_bytes() for p in paths] == list(files.values())
    assert requests == ["/mirror/one.txt", "/mirror/two.txt"]  # rstrip("/") + "/" + name
    assert set(seen) == {"one.txt", "two.txt"}

    # Present and verified: nothing is downloaded again ...
    assert fetch_dataset("toy", target, mirror=mirror) == paths
    assert len(requests) == 2
    # ... unless forced, or a copy is corrupt.
    fetch_dataset("toy", target, mirror=mirror.rstrip("/"), force=True)
    assert len(requests) == 4
    (target / "two.txt").write_bytes(b"tampered")
    fetch_dataset("toy", target, mirror=mirror)
    assert requests[4:] == ["/mirror/two.txt"]
    assert (target / "two.txt").read_bytes() == files["two.txt"]
    assert _contents(target) == ["one.txt", "two.txt"]


def test_fetch_dataset_keeps_verified_bz2_copy(toy_dataset, target):
    spec, mirror, files, requests = toy_dataset
    target.mkdir()
    (target / "one.txt.bz2").write_bytes(bz2.compress(files["one.txt"]))
    paths = fetch_dataset("toy", target, mirror=mirror)
    assert paths == [target / "one.txt.bz2", target / "two.txt"]
    assert requests == ["/mirror/two.txt"]


def test_fetch_dataset_partial_failure_keeps_good_files(toy_dataset, server, target):
    spec, mirror, files, requests = toy_dataset
    (server[1] / "mirror" / "two.txt").unlink()
    with pytest.raises(DataError, match="two.txt failed: HTTP 404"):
        fetch_dataset("toy", target, mirror=mirror)
    assert _contents(target) == ["one.txt"]


def test_fetch_dataset_unknown_name(target):
    with pytest.raises(DataError, match="unknown dataset"):
        fetch_dataset("nope", target)
    assert not target.exists()


@pytest.mark.data
def test_fetch_real_a9a_from_local_mirror(server, data_dir, target):
    base, www, requests = server
    for fs in REGISTRY["a9a"].files:
        src = find_file(fs, data_dir)
        raw = bz2.decompress(src.read_bytes()) if src.suffix == ".bz2" else src.read_bytes()
        (www / fs.name).write_bytes(raw)
    paths = fetch_dataset("a9a", target, mirror=base)
    assert [p.name for p in paths] == ["a9a", "a9a.t"]
    assert [p.stat().st_size for p in paths] == [f.size for f in REGISTRY["a9a"].files]
    assert sorted(requests) == ["/a9a", "/a9a.t"]
    assert _contents(target) == ["a9a", "a9a.t"]
