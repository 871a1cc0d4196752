"""The ``vfl`` command as a user types it: in this process through the console entry point
(``cli_helpers.vfl``), and once end to end through the installed script."""

import bz2
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from cli_helpers import SMALL, assert_one_line_error, vfl, vfl_process

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def small_config(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(SMALL.format(epochs=15))
    return path


@pytest.mark.pdf
def test_run_and_plot_write_every_file(tmp_path, small_config):
    out = tmp_path / "run"
    proc = vfl("run", "--config", small_config, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "ADMM sharing (15 epochs)" in proc.stdout and f"wrote {out}" in proc.stdout
    for name in ("config.json", "manifest.json", "metrics.csv", "baselines.json", "loss.png", "loss.pdf"):
        assert (out / name).is_file(), name
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp dirs left

    metrics = pd.read_csv(out / "metrics.csv")
    required = [
        "epoch",
        "objective",
        "train_logloss",
        "test_logloss",
        "test_accuracy",
        "primal_residual",
        "dual_residual",
        "wall_time_s",
    ]
    assert list(metrics.columns[: len(required)]) != [] and set(required) <= set(metrics.columns)
    assert metrics["epoch"].tolist() == list(range(16))

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["objective"]["loss"] == "logistic" and manifest["objective"]["lam"] == 0.01
    assert manifest["objective"]["reduction"] == "sum" and manifest["objective"]["intercept"] is True
    assert manifest["solver"]["rho"] == 1.0 and manifest["seed"] == 0
    assert [p["column_ranges"] for p in manifest["partition"]] == [[[0, 5]], [[5, 12]]]
    for key in ("vfl_version", "python", "libraries", "git"):
        assert key in manifest
    assert {"started_at", "finished_at", "timing"} <= set(manifest["diagnostic"])
    assert manifest["libraries"]["numpy"]
    config = json.loads((out / "config.json").read_text())
    assert config["solver"]["epochs"] == 15 and config["name"] == "small"
    baselines = json.loads((out / "baselines.json").read_text())
    assert {"central", "sklearn_all_features", "sklearn_local_only"} <= set(baselines)

    fig = tmp_path / "fig" / "cmp.png"
    proc = vfl("plot", out, out, "--out", fig)
    assert proc.returncode == 0, proc.stderr
    assert fig.is_file() and fig.with_suffix(".pdf").is_file()
    assert fig.stat().st_size > 10_000
    wall = tmp_path / "fig" / "wall.png"
    proc = vfl("plot", out, "--out", wall, "--x", "wall", "--suboptimality")
    assert proc.returncode == 0, proc.stderr
    assert wall.is_file()
    log = tmp_path / "fig" / "log.png"  # --log on the objective (suboptimality always is)
    assert vfl("plot", out, "--out", log, "--log").returncode == 0 and log.is_file()


def test_same_seed_same_numbers(tmp_path, small_config):
    a, b = tmp_path / "a", tmp_path / "b"
    assert vfl("run", "--config", small_config, "--out", a, "-q").returncode == 0
    assert vfl("run", "--config", small_config, "--out", b, "-q", "--no-cache", "--no-figure").returncode == 0
    assert (a / "loss.png").is_file() and not list(b.glob("loss.*"))  # --no-figure
    timing = ["wall_time_s", "x_time_s", "z_time_s", "y_time_s"]
    ma = pd.read_csv(a / "metrics.csv").drop(columns=timing)
    mb = pd.read_csv(b / "metrics.csv").drop(columns=timing)
    pd.testing.assert_frame_equal(ma, mb, check_exact=True)


def test_overrides_and_existing_out(tmp_path, small_config):
    out = tmp_path / "run"
    proc = vfl("run", "--config", small_config, "--out", out, "--epochs", "3", "--set", "solver.rho=2", "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""  # --quiet
    config = json.loads((out / "config.json").read_text())
    assert config["solver"]["epochs"] == 3 and config["solver"]["rho"] == 2
    again = vfl("run", "--config", small_config, "--out", out, "-q")
    assert_one_line_error(again, "already exists", "--overwrite")
    assert vfl("run", "--config", small_config, "--out", out, "-q", "--overwrite").returncode == 0


@pytest.mark.parametrize(
    "patch, fragments",
    [
        (("[solver]", "[solver]\nrhoo = 3"), ["unknown key 'solver.rhoo'", "valid keys in [solver]"]),
        (("[objective]", "[objective]\nloss = 7"), ["objective.loss must be a string"]),
        (("columns = [5, 7]", "columns = [5, 9]"), ["sum to 14 but the dataset has 12 features"]),
        (("columns = [5, 7]", "ranges = [[0, 6], [5, 12]]"), ["party 2 overlaps party 1 at columns 5"]),
        (("columns = [5, 7]", "columns = [12, 0]"), ["party 2 has 0 columns"]),
        (("n_train = 300", "n_trian = 300"), ["n_trian"]),
        (("lam = 0.01", "lam = -1"), ["objective.lam must be >= 0"]),
    ],
)
def test_bad_config_exits_2_with_one_line(tmp_path, patch, fragments):
    text = SMALL.format(epochs=2).replace(*patch)
    path = tmp_path / "bad.toml"
    path.write_text(text)
    out = tmp_path / "never"
    proc = vfl("run", "--config", path, "--out", out)
    assert_one_line_error(proc, *fragments)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [path]  # nothing half-written anywhere


def test_usage_errors_are_one_line(tmp_path, small_config):
    assert_one_line_error(vfl("run"), "Missing option '--config'")
    assert_one_line_error(vfl("run", "--config", small_config, "--epochs", "0"), "--epochs")
    assert_one_line_error(vfl("run", "--config", tmp_path / "nope.toml"), "config file not found")
    assert_one_line_error(vfl("plot", tmp_path), "lacks config.json")


def test_debug_shows_traceback(tmp_path):
    proc = vfl("--debug", "run", "--config", tmp_path / "nope.toml")
    assert proc.returncode == 2
    assert "Traceback" in proc.stderr and "error: config file not found" in proc.stderr


def test_missing_data_exits_2(tmp_path):
    empty = tmp_path / "data"
    empty.mkdir()
    proc = vfl("run", "--config", REPO / "configs" / "a9a.toml", "--data-dir", empty, "--out", tmp_path / "out")
    assert_one_line_error(proc, "a9a", str(empty))
    assert not (tmp_path / "out").exists()


@pytest.mark.data
def test_checksum_mismatch_exits_2(tmp_path, data_dir):
    bad = tmp_path / "data"
    bad.mkdir()
    shutil.copy(data_dir / "a9a.t.bz2", bad / "a9a.t.bz2")
    # a well-formed but altered a9a: one label flipped

    text = bz2.decompress((data_dir / "a9a.bz2").read_bytes()).decode()
    (bad / "a9a").write_text(("+1" + text[2:]) if text.startswith("-1") else ("-1" + text[2:]))
    proc = vfl("run", "--config", REPO / "configs" / "a9a.toml", "--data-dir", bad, "--out", tmp_path / "out")
    assert_one_line_error(proc, "sha256 mismatch", "f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906")
    assert not (tmp_path / "out").exists()


def test_divergence_is_one_line_and_writes_nothing(tmp_path):
    # squared loss, sum reduction: L = 2, Assumption 1.2(c) needs rho > 2.83
    path = tmp_path / "div.toml"
    path.write_text(
        SMALL.format(epochs=2000)
        .replace("[objective]", '[objective]\nloss = "squared"')
        .replace("columns = [5, 7]", "columns = [2, 2, 2, 2, 2, 2]")
        .replace("lam = 0.01", "lam = 1e-6")
        .replace("[solver]", "[solver]\nrho = 0.05")
    )
    proc = vfl("run", "--config", path, "--out", tmp_path / "out")
    assert_one_line_error(proc, "admm_sharing diverged at epoch", "rho > sqrt(2) L = 2.828")
    assert not (tmp_path / "out").exists()


def test_small_rho_warns_in_summary(tmp_path):
    path = tmp_path / "warn.toml"
    path.write_text(SMALL.format(epochs=2).replace("[solver]", "[solver]\nrho = 0.3"))
    proc = vfl("run", "--config", path, "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert "warning: rho = 0.3 is not above sqrt(2) L = 0.3536" in proc.stdout
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["solver"]["assumption_1_2c"] == {
        "L": 0.25,
        "rho_min": pytest.approx(0.35355339),
        "satisfied": False,
    }


@pytest.mark.slow
def test_console_script_end_to_end(tmp_path, small_config):
    """The installed ``vfl`` script and ``python -m vfl.cli.main`` in new processes: help, a
    run, a user error as one line on the real stderr (exit 2) and ``--debug``'s traceback."""
    script = Path(sys.executable).with_name("vfl")
    assert script.is_file(), script
    proc = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Run one experiment" in proc.stdout, proc.stderr
    out = tmp_path / "run"
    proc = subprocess.run(
        [script, "run", "--config", small_config, "--out", out], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert "ADMM sharing (15 epochs)" in proc.stdout and f"wrote {out}" in proc.stdout
    assert (out / "metrics.csv").is_file() and (out / "loss.png").is_file()
    assert_one_line_error(vfl_process("run", "--config", tmp_path / "nope.toml"), "config file not found")
    proc = vfl_process("--debug", "run", "--config", tmp_path / "nope.toml")
    assert proc.returncode == 2
    assert "Traceback" in proc.stderr and "error: config file not found" in proc.stderr
