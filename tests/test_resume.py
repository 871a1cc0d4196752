"""Issue 39: every run resumes. ``vfl run`` writes checkpoint.json every
``run.checkpoint_every`` iterations; ``vfl run --resume RUN_DIR`` after the coordinator or
the scheduler died finishes with the numbers of an unbroken run, bit for bit (replayable
noise); a deployment run is never replayed (its released rounds are never drawn again)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from cli_helpers import assert_one_line_error, vfl
from test_parties import assert_same_numbers

import vfl.experiments.run_directory as run_directory
from vfl.experiments.checkpoint import Checkpoint, RepeatState, write_checkpoint
from vfl.experiments.config import load_config
from vfl.experiments.runner import run_experiment
from vfl.experiments.transport.dask_units import DaskUnits

#: ADMM sharing with replayable noise (sigma, output form), two repeats
CONFIG = """name = "resume"
[data]
dataset = "synthetic"
options = { n_train = 120, n_test = 40, n_features = 8, seed = 1 }
[preprocessing]
normalize_rows = true
[partition]
columns = [4, 4]
[solver]
name = "admm_sharing"
epochs = %d
[privacy]
sigma = 0.3
form = "output"
[run]
repeats = 2
checkpoint_every = 5
baselines = "none"
"""


def _captured(monkeypatch) -> list:
    """The RunResult each ``vfl run`` in this process writes (exact, not its CSV's digits)."""

    written, write = [], run_directory.write_run

    def keep(result, out, **kw):
        written.append(result)
        return write(result, out, **kw)

    monkeypatch.setattr(run_directory, "write_run", keep)
    return written


def _checkpoint(run_dir) -> dict | None:
    try:
        return json.loads((run_dir / "checkpoint.json").read_text())
    except (OSError, ValueError):
        return None


@pytest.mark.slow
def test_a_killed_coordinator_resumes_to_the_numbers_of_an_unbroken_run(tmp_path, monkeypatch):
    path = tmp_path / "resume.toml"
    path.write_text(CONFIG % 200)
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vfl.cli.main",
            "run",
            "--config",
            str(path),
            "--out",
            str(out),
            "--quiet",
            "--no-figure",
        ],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:  # SIGKILL once the second repeat is checkpointed past its 10th iteration
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            c = _checkpoint(out)
            if c and len(c["repeats"]) == 2 and c["repeats"][1]["epoch"] >= 10:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    # nothing half-written (a checkpoint being written when the kill came is left beside)
    assert [p.name for p in out.iterdir() if not p.name.startswith(".")] == ["checkpoint.json"]
    c = _checkpoint(out)
    assert c["resume"] == f"vfl run --resume {out}"
    assert c["repeats"][0]["done"] and not c["repeats"][1]["done"]

    written = _captured(monkeypatch)
    assert vfl("run", "--resume", out, "--quiet").returncode == 0
    assert not (out / "checkpoint.json").exists()

    unbroken = run_experiment(load_config(path), with_baselines=False)
    (resumed,) = written
    assert_same_numbers(resumed, unbroken)
    assert resumed.manifest.dump()["diagnostic"]["resumed_from"].startswith("repeat 2, iteration ")
    # the finished run is not resumed again
    assert_one_line_error(vfl("run", "--resume", out), "no checkpoint.json there (the run finished: nothing to resume)")


def test_resume_refuses_other_options_and_a_deployment(tmp_path):
    assert_one_line_error(
        vfl("run", "--resume", tmp_path, "--set", "run.seed=1"),
        "--resume takes the config and options from the checkpoint: leave out --set",
    )
    assert_one_line_error(vfl("run", "--resume", tmp_path / "none"), "no such run directory")
    raw = load_config(_deployment(tmp_path)).to_dict()
    write_checkpoint(
        tmp_path / "dep",
        Checkpoint(
            config=raw,
            options={},
            released={"events": 6, "epsilon": 1.25},
            repeats=[RepeatState(epoch=3, rows=[], elapsed=0.0, digest="")],
        ),
    )
    assert_one_line_error(
        vfl("run", "--resume", tmp_path / "dep"),
        "a deployment run (exact noise) is never replayed: its ledger records "
        "6 release(s) by repeat 1, iteration 3 (epsilon 1.25)",
    )


def _deployment(tmp_path):
    path = tmp_path / "dep.toml"
    path.write_text(
        (CONFIG % 4)
        .replace('sigma = 0.3\nform = "output"\n', "")
        .replace(
            "[privacy]\n",
            '[privacy]\ndelta = 1e-5\nepsilon = 4.0\nform = "output"\nneighbours = '
            '"row"\nb1 = 1.0\nclip = 1.0\ninput_clip = 2.0\n',
        )
    )
    return path


@pytest.mark.slow
def test_a_killed_scheduler_is_named_and_the_run_resumes_on_another(tmp_path, monkeypatch):
    """The scheduler and party 1's worker die after a checkpoint: one line naming the
    scheduler (not the worker), exit 2, the run directory says how to resume; resumed on
    another cluster, the run ends with the unbroken numbers."""
    distributed = pytest.importorskip("dask.distributed")

    path = tmp_path / "resume.toml"
    path.write_text((CONFIG % 12) + 'backend = "dask"\nparty_wait = 1.0\n')
    out = tmp_path / "run"
    send = DaskUnits._send

    def dying(self, session, call, requests, seqs):
        if session.repeat == 1 and session.done[0] == 6 and not dying.done:
            dying.done = True  # after the checkpoint at 5: the scheduler and a worker go
            (worker,) = [w for w in cluster.workers.values() if w.address == self.slots[0].worker]
            cluster.sync(worker.close)
            cluster.sync(cluster.scheduler.close)
        return send(self, session, call, requests, seqs)

    dying.done = False
    kw = dict(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address=None
    )
    monkeypatch.setattr(DaskUnits, "_send", dying)
    cluster = distributed.LocalCluster(**kw)
    try:
        address = cluster.scheduler_address
        proc = vfl("run", "--config", path, "--out", out, "--cluster", address, "--quiet", "--no-figure")
    finally:  # its scheduler is gone: close what is left without asking it to shut down
        for worker in list(cluster.workers.values()):
            cluster.sync(worker.close)
        # (asking waits on the dead scheduler, times out, and leaves the cluster 'closing':
        # its ResourceWarning then fired at a later garbage collection, in another test)
        cluster.shutdown_scheduler = not dying.done
        cluster.close(timeout=10)
    assert cluster.status.name == "closed"
    assert_one_line_error(
        proc, f"the Dask scheduler {address} was lost at epoch 7", f"checkpoint in {out}: vfl run --resume {out}"
    )
    assert "party 1" not in proc.stderr
    assert [p.name for p in out.iterdir() if not p.name.startswith(".")] == ["checkpoint.json"]
    monkeypatch.setattr(DaskUnits, "_send", send)
    written = _captured(monkeypatch)
    with distributed.LocalCluster(**kw) as cluster:
        assert vfl("run", "--resume", out, "--cluster", cluster.scheduler_address, "--quiet").returncode == 0

    unbroken = run_experiment(load_config(path, ['run.backend="inprocess"']), with_baselines=False)
    assert_same_numbers(written[0], unbroken)
