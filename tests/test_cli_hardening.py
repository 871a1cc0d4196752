"""Hostile inputs, as a new user would type them: one `error:` line, exit 2, before any work,
nothing left behind (issue 15's table), plus leftovers, warnings and interrupted sweeps.

`vfl` runs in this process (``cli_helpers.vfl``); the interrupted sweep signals a real one."""

import importlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from cli_helpers import SMALL, assert_one_line_error, vfl

REPO = Path(__file__).resolve().parents[1]


def one_line(proc, *fragments):
    assert_one_line_error(proc, *fragments)


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(SMALL.format(epochs=5))
    return path


@pytest.fixture
def done_run(tmp_path, small):
    out = tmp_path / "done"
    assert vfl("run", "--config", small, "--out", out, "-q").returncode == 0
    return out


def test_sweep_noise_with_only_sigma_0_is_refused_before_work(tmp_path):
    out = tmp_path / "sw"
    proc = vfl("sweep-noise", "--config", REPO / "configs" / "a9a.toml", "--out", out)
    one_line(proc, "nothing to sweep", "--sigmas")
    assert not out.exists()


def test_output_under_a_regular_file(tmp_path, small):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    one_line(vfl("run", "--config", small, "--out", blocker / "run"), "is a file, not a directory")
    one_line(
        vfl("sweep-noise", "--config", small, "--sigmas", "0,1", "--out", blocker / "sw"), "is a file, not a directory"
    )
    one_line(vfl("run", "--config", small, "--out", blocker), "is a file")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anywhere")
def test_unwritable_output_directory(tmp_path, small):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        one_line(vfl("run", "--config", small, "--out", locked / "run"), "permission denied")
        one_line(vfl("run", "--config", small, "-q", cwd=locked), "permission denied")
    finally:
        locked.chmod(0o700)


def test_plot_output_checked_before_reading(tmp_path, done_run):
    one_line(vfl("plot", done_run, "--out", tmp_path / "fig.xyz"), ".xyz is not a supported format")
    one_line(vfl("plot", done_run, "--out", tmp_path / "fig"), "has no extension")
    fig = tmp_path / "fig.png"
    assert vfl("plot", done_run, "--out", fig, "--label", "mine").returncode == 0
    one_line(vfl("plot", done_run, "--out", fig), "already exists", "--overwrite")
    assert vfl("plot", done_run, "--out", fig, "--overwrite").returncode == 0
    one_line(
        vfl("plot", done_run, done_run, "--out", tmp_path / "two.png", "--label", "a"),
        "--label was given 1 times for 2 runs",
    )


def test_plot_of_damaged_metrics(tmp_path, done_run):
    empty = tmp_path / "empty"
    empty.mkdir()
    for name in ("config.json", "manifest.json", "baselines.json"):
        (empty / name).write_text((done_run / name).read_text())
    (empty / "metrics.csv").write_text("")
    one_line(vfl("plot", empty, "--out", tmp_path / "a.png"), "metrics.csv is empty")
    pd.read_csv(done_run / "metrics.csv").drop(columns=["test_logloss"]).to_csv(empty / "metrics.csv", index=False)
    one_line(vfl("plot", empty, "--out", tmp_path / "b.png"), "has no column 'test_logloss'")


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("--sigma", "nan", "--epochs", 10, "--delta", 1e-5), "--sigma must be a finite number"),
        (("--sigma", "inf", "--epochs", 10, "--delta", 1e-5), "--sigma must be a finite number"),
        (("--epsilon", "1e6", "--epochs", 10, "--delta", 1e-5), "--epsilon = 1e+06: must be <= 700"),
        (("--epsilon", 1, "--epochs", 10, "--delta", "nan"), "--delta must be in (0, 1)"),
        (("--sigma", 1, "--sensitivity", 0, "--epochs", 10, "--delta", 1e-5), "--sensitivity must be > 0"),
    ],
)
def test_privacy_arguments(args, fragment):
    one_line(vfl("privacy", *args), fragment)


def test_huge_epsilon_in_a_config(tmp_path):
    path = tmp_path / "e.toml"
    path.write_text(SMALL.format(epochs=3) + "[privacy]\ndelta = 1e-5\nepsilon = 1e9\nclip = 1.0\n")
    one_line(vfl("run", "--config", path, "--out", tmp_path / "out"), "privacy.epsilon = 1e+09", "must be <= 700")
    assert not (tmp_path / "out").exists()


def test_bad_scheduler_address_leaves_nothing(tmp_path, small):
    out = tmp_path / "sw"
    one_line(
        vfl("sweep-noise", "--config", small, "--sigmas", "0,1", "--scheduler", "notanaddress", "--out", out),
        "not a Dask scheduler address",
    )
    assert not out.exists()


def test_unreachable_scheduler_leaves_nothing(tmp_path, small):
    pytest.importorskip("dask.distributed")
    out = tmp_path / "sw"
    proc = vfl("sweep-noise", "--config", small, "--sigmas", "0,1", "--scheduler", "tcp://127.0.0.1:1", "--out", out)
    one_line(proc, "cannot reach the Dask scheduler")
    assert not out.exists()


@pytest.mark.parametrize("name", ["a\\u0000b", "two\\nlines"])
def test_control_characters_in_name(tmp_path, name):
    path = tmp_path / "n.toml"
    path.write_text(f'name = "{name}"\n' + SMALL.format(epochs=3).replace('name = "small"\n', ""))
    one_line(vfl("run", "--config", path), "control characters")


def test_epsilons_on_a_config_without_accounting(tmp_path, small):
    out = tmp_path / "sw"
    one_line(vfl("sweep-noise", "--config", small, "--epsilons", "1,2", "--out", out), "needs accounting mode")
    assert not out.exists()


def test_reproduce_with_missing_configs_creates_nothing(tmp_path):
    out = tmp_path / "figs"
    one_line(vfl("reproduce", "fig1", "--configs", tmp_path, "--out", out), "not found")
    assert not out.exists()
    one_line(vfl("reproduce", "nosuchpaper"), "unknown paper or figure 'nosuchpaper'")


def test_epochs_are_capped(tmp_path, small):
    one_line(vfl("run", "--config", small, "--epochs", 10**12), "solver.epochs must be <= 1000000")
    one_line(vfl("run", "--config", small, "--set", f"solver.epochs={10**12}"), "solver.epochs must be <= 1000000")


def test_sgd_divergence_is_caught(tmp_path):
    path = tmp_path / "sgd.toml"
    path.write_text(
        SMALL.format(epochs=50).replace("[solver]", '[solver]\nname = "fdml_sgd"\nlr = 1e6\nlr_schedule = "constant"')
    )
    proc = vfl("run", "--config", path, "--out", tmp_path / "out")
    one_line(proc, "fdml_sgd diverged", "lower solver.lr")
    assert not (tmp_path / "out").exists()


def test_noise_divergence_blames_the_noise_not_rho(tmp_path):
    path = tmp_path / "n.toml"
    path.write_text(SMALL.format(epochs=20) + "[privacy]\nsigma = 1e300\n")
    proc = vfl("run", "--config", path, "--out", tmp_path / "out")
    one_line(proc, "diverged", "noise sigma = 1e+300")
    assert "Assumption 1.2(c) of Hu et al. asks" not in proc.stderr


@pytest.mark.data
def test_lam_0_is_refused_before_the_baselines_and_without_warnings(tmp_path, data_dir):
    proc = vfl(
        "run",
        "--config",
        REPO / "configs" / "a9a.toml",
        "--set",
        "objective.lam=0",
        "--out",
        tmp_path / "out",
        env={"VFL_DATA_DIR": str(data_dir)},
    )
    one_line(proc, "singular")  # one line: no sklearn warnings before it
    assert not (tmp_path / "out").exists()


@pytest.mark.data
def test_references_from_another_directory(tmp_path, data_dir):
    # CI installs the package without -e, so the clone is named explicitly
    proc = vfl(
        "references",
        "a9a-admm",
        "--root",
        REPO / "results" / "reference",
        "--repo",
        REPO,
        cwd=tmp_path,
        env={"VFL_DATA_DIR": str(data_dir)},
    )
    assert proc.returncode == 0, proc.stderr
    assert "ok    a9a-admm" in proc.stdout
    assert list(tmp_path.iterdir()) == []  # nothing written into the current directory


def test_references_outside_a_clone_is_one_line(tmp_path):
    package = Path(importlib.import_module("vfl.cli").__file__).resolve().parents[1]
    if (package / "results" / "reference").is_dir():
        pytest.skip("editable install: the clone is found beside the package")
    proc = vfl("references", "a9a-admm", cwd=tmp_path)
    one_line(proc, "--root DIR")


def test_stale_partial_of_a_dead_process_is_cleaned(tmp_path, small):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".run.{dead.pid}.abcd.partial"
    stale.mkdir()
    # a live writer's, another process than the one running `vfl` (this one): left alone
    live = tmp_path / f".run.{os.getppid()}.efgh.partial"
    live.mkdir()
    assert vfl("run", "--config", small, "--out", tmp_path / "run", "-q").returncode == 0
    assert not stale.exists() and live.exists()


def test_run_directory_follows_the_umask(tmp_path, small):
    out = tmp_path / "run"
    mask = os.umask(0o022)
    try:
        proc = vfl("run", "--config", small, "--out", out, "-q")
    finally:
        os.umask(mask)
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_mode & 0o777 == 0o755


def test_help_is_grouped_and_every_command_has_an_example():
    proc = vfl("--help")
    assert proc.returncode == 0
    for section in ("Run one experiment", "Sweeps", "Reproduce the papers", "Data and algorithms"):
        assert section in proc.stdout
    assert "..." not in proc.stdout.split("Run one experiment")[1]  # no truncated summaries
    for command in ("run", "plot", "audit", "privacy", "sweep", "sweep-noise", "reproduce", "references", "solvers"):
        text = vfl(command, "--help").stdout
        assert f"vfl {command}" in text.split("Options:")[0], command


@pytest.mark.slow  # end to end: a real process and a real signal
def test_interrupted_sweep_resumes_to_the_same_result(tmp_path, small):
    """SIGINT to a running sweep (a new process), rerun, compare with an uninterrupted sweep."""
    args = [
        "sweep",
        "--config",
        str(small),
        "--grid",
        "privacy.sigma=0,0.5,1,2",
        "--seeds",
        "0,1",
        "--set",
        "solver.epochs=40",
    ]
    full = vfl(*args, "--out", tmp_path / "full", "-q")
    assert full.returncode == 0, full.stderr
    out = tmp_path / "cut"
    proc = subprocess.Popen(
        [sys.executable, "-m", "vfl.cli.main", *args, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while time.time() < deadline and not any(
        p.is_dir() and not p.name.startswith(".") for p in (out.iterdir() if out.exists() else [])
    ):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode in (130, 0), err  # 0: it finished before the signal landed
    again = vfl(*args, "--out", out, "-q")
    assert again.returncode == 0, again.stderr
    a = pd.read_csv(tmp_path / "full" / "sweep.csv")
    b = pd.read_csv(out / "sweep.csv")
    timing = [c for c in a.columns if "time" in c]
    pd.testing.assert_frame_equal(a.drop(columns=timing), b.drop(columns=timing))
    assert not list(out.glob(".*.partial"))
