"""The "Deploying parties" recipe (docs/deploy.md, README) as written: certificates, two
``vfl party serve`` processes and ``vfl run`` as the coordinator, on localhost."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from vfl.experiments.transport.dask_cluster import local_cluster

pytest.importorskip("grpc")

REPO = Path(__file__).resolve().parents[1]


def _recipe() -> list[str]:
    text = (REPO / "docs" / "deploy.md").read_text()
    m = re.search(r"<!-- example: deploying parties -->\s*```bash\n(.*?)```", text, re.S)
    return [line for line in m.group(1).strip().splitlines()]


def _wait(port: int, proc, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"no party on port {port}")


@pytest.mark.slow
@pytest.mark.data
def test_the_deploying_parties_recipe_runs_end_to_end_on_localhost(tmp_path):
    shutil.copytree(REPO / "configs" / "deploy", tmp_path / "configs" / "deploy")
    env = {**os.environ, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    lines = _recipe()
    assert [shlex.split(x)[:3] for x in lines] == [
        ["vfl", "party", "certs"],
        ["vfl", "party", "serve"],
        ["vfl", "party", "serve"],
        ["vfl", "run", "--config"],
    ]

    def command(line):  # `vfl ...` as the installed entry point runs it
        return [sys.executable, "-m", "vfl.cli.main", *shlex.split(line)[1:]]

    subprocess.run(command(lines[0]), cwd=tmp_path, env=env, check=True, capture_output=True)
    parties = [
        subprocess.Popen(
            command(line), cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for line in lines[1:3]
    ]
    try:
        for port, proc in zip((50051, 50052), parties):
            _wait(port, proc)
        run = subprocess.run(
            command(lines[3]) + ["--out", "run", "--quiet"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr
    finally:
        for proc in parties:
            proc.send_signal(signal.SIGTERM)
        codes = [proc.wait(timeout=30) for proc in parties]
    assert codes == [0, 0]
    metrics = pd.read_csv(tmp_path / "run" / "metrics.csv")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["backend"]["channel"].startswith("gRPC over mutual TLS")
    assert manifest["communication"]["transport"]["phases"]["diagnostics"]["tcp_bytes"] == 0
    for m in (1, 2):
        recs = [json.loads(x) for x in (tmp_path / f"party{m}" / "releases.jsonl").read_text().splitlines()]
        assert len(recs) == 10 and all(r["exact"] for r in recs)
        assert abs(recs[-1]["epsilon_run"] - metrics["epsilon_tight"].iloc[-1]) < 1e-9
        assert recs[-1]["epsilon_run"] <= 8.0


@pytest.mark.slow
def test_the_local_dask_cluster_listens_on_loopback_only():
    cluster, client = local_cluster(1)
    try:
        client.wait_for_workers(1, timeout=60)
        addresses = [cluster.scheduler_address, *client.scheduler_info()["workers"]]
        assert all(a.startswith("tcp://127.0.0.1:") for a in addresses), addresses
    finally:
        client.close()
        cluster.close()
