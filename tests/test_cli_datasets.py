"""Tests of the ``vfl datasets`` click group (list / fetch / verify).

Downloads use ``file://`` mirrors, which urllib serves like HTTP, so these
tests need no server and no network.
"""

import bz2
import hashlib

import pytest
from click.testing import CliRunner

from vfl.cli.datasets_cmd import datasets
from vfl.datasets import REGISTRY, DatasetSpec, FileSpec, catalog, find_file


def run(*args):
    return CliRunner().invoke(datasets, [str(a) for a in args])


def sha(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def test_list_empty_dir_shows_missing_and_generated(tmp_path):
    result = run("list", "--data-dir", tmp_path)
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.stdout.splitlines()[1:]}
    assert str(tmp_path) in result.stdout.splitlines()[0]
    assert "32561/16281 x 123" in lines["a9a"] and "missing" in lines["a9a"]
    assert "a9a.t" in lines["a9a"]
    assert "generated" in lines["synthetic"]
    stand_in = lines["synthetic:gisette-shaped"]
    assert "6000/1000 x 5000" in stand_in and "NOT the real gisette" in stand_in


def test_list_partial(tmp_path):
    (tmp_path / "a9a.bz2").write_bytes(bz2.compress(b"+1 1:1\n"))
    lines = {l.split()[0]: l for l in run("list", "--data-dir", tmp_path).stdout.splitlines()}
    assert "partial" in lines["a9a"] and lines["a9a"].endswith("missing a9a.t")


def test_list_uses_env_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("VFL_DATA_DIR", str(tmp_path))
    assert f"data dir: {tmp_path}" in run("list").stdout


@pytest.mark.data
def test_list_shared_data_dir(data_dir):
    result = run("list", "--data-dir", data_dir)
    assert result.exit_code == 0
    lines = {line.split()[0]: line for line in result.stdout.splitlines()[1:]}
    assert " present " in lines["a9a"] and str(data_dir) in lines["a9a"]
    assert " present " in lines["adult"]


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A registered two-file dataset with a file:// mirror holding correct copies."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    files = {"one.txt": b"one\n" * 5000, "two.txt": b"two\n" * 3000}
    for name, content in files.items():
        (mirror / name).write_bytes(content)
    spec = DatasetSpec(
        name="toy",
        description="toy",
        n_train=1,
        n_test=1,
        n_features=1,
        files=tuple(FileSpec(n, "http://127.0.0.1:9/" + n, sha(c)) for n, c in files.items()),
    )
    monkeypatch.setitem(catalog.REGISTRY, "toy", spec)
    return mirror, files


def test_fetch_via_mirror_then_verify(toy, tmp_path):
    mirror, files = toy
    data = tmp_path / "data"
    result = run("fetch", "toy", "--data-dir", data, "--mirror", mirror.as_uri())
    assert result.exit_code == 0, result.output
    assert "all 2 files verified" in result.stdout
    assert "downloading one.txt" in result.stderr  # progress bar goes to stderr
    assert sorted(p.name for p in data.iterdir()) == ["one.txt", "two.txt"]

    again = run("fetch", "toy", "--data-dir", data, "--mirror", mirror.as_uri())
    assert again.exit_code == 0 and again.stdout.count("already present") == 2

    ok = run("verify", "toy", "--data-dir", data)
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.count(" ok ") == 2


def test_fetch_errors_exit_2(toy, tmp_path):
    mirror, files = toy
    (mirror / "two.txt").write_bytes(b"corrupted")
    result = run("fetch", "toy", "--data-dir", tmp_path / "data", "--mirror", mirror.as_uri())
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].startswith("error: two.txt: sha256 mismatch")
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["one.txt"]

    unknown = run("fetch", "nope", "--data-dir", tmp_path)
    assert unknown.exit_code == 2 and "error: unknown dataset 'nope'" in unknown.stderr


def test_verify_reports_mismatch_exit_2(toy, tmp_path):
    mirror, files = toy
    (tmp_path / "one.txt").write_bytes(files["one.txt"])
    (tmp_path / "two.txt").write_bytes(b"tampered")
    result = run("verify", "toy", "--data-dir", tmp_path)
    assert result.exit_code == 2
    assert "one.txt" in result.stdout and " ok " in result.stdout
    assert "MISMATCH" in result.stdout and sha(b"tampered") in result.stdout
    assert result.stderr.strip() == "error: 1 file(s) failed verification: two.txt"


def test_verify_missing(tmp_path):
    named = run("verify", "a9a", "--data-dir", tmp_path)
    assert named.exit_code == 2
    assert "missing" in named.stdout and "`vfl datasets fetch a9a`" in named.stderr
    # Without names, missing datasets are reported but are not failures.
    everything = run("verify", "--data-dir", tmp_path)
    assert everything.exit_code == 0 and "gisette_train.data" in everything.stdout
    assert run("verify", "synthetic").exit_code == 2


@pytest.mark.data
def test_fetch_real_a9a_via_mirror_and_verify(data_dir, tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for fs in REGISTRY["a9a"].files:
        (mirror / fs.name).write_bytes(
            bz2.decompress(find_file(fs, data_dir).read_bytes())
            if find_file(fs, data_dir).suffix == ".bz2"
            else find_file(fs, data_dir).read_bytes()
        )
    data = tmp_path / "data"
    result = run("fetch", "a9a", "--data-dir", data, "--mirror", mirror.as_uri() + "/")
    assert result.exit_code == 0, result.output
    assert (data / "a9a").stat().st_size == REGISTRY["a9a"].files[0].size
    assert run("verify", "a9a", "--data-dir", data).exit_code == 0

    (data / "a9a.t").write_bytes(b"-1 1:1\n")
    bad = run("verify", "a9a", "--data-dir", data)
    assert bad.exit_code == 2 and "MISMATCH" in bad.stdout
