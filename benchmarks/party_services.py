"""Time per epoch of ADMM sharing with each party its own service (``vfl party serve`` in
its own process, gRPC over mutual TLS on localhost), against in-process.

``python -m benchmarks --only party_services``. On a9a with two parties (66 and 57
columns), one BLAS thread everywhere, solver time only (the parties are started and
connected before the clock):

- **transport**: the same config (no privacy) in-process and on the party services; the
  numbers are the same to the bit (checked here). Target: at most 3x in-process.
- **deployment**: ADMM sharing at epsilon 8 (row relation) on the party services, as a
  simulation (replayable, numpy's Gaussian sampler) and as a deployment (each party draws
  exact discrete Gaussian noise from its own OS entropy, pre-drawing the next release's
  noise while it waits). Target: a deployment epoch at most 2x a simulation epoch.

Beside them: the bytes per epoch TCP carried (TLS included) and the protocol's payload,
and the round trip of one no-op call (Health) over mutual TLS.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from vfl.datasets.parties.tomlw import dumps
from vfl.experiments.config import config_from_dict
from vfl.experiments.run_plan import plan_run
from vfl.experiments.runner import run_experiment
from vfl.experiments.transport.service_tls import write_deployment
from vfl.experiments.transport.service_units import ServiceUnits

COLUMNS = [66, 57]
PRIVATE = {
    "form": "output",
    "delta": 1e-5,
    "epsilon": 8.0,
    "calibration": "sound",
    "neighbours": "row",
    "b1": 1.0,
    "clip": 1.0,
    "input_clip": 2.0,
}


def _raw(epochs: int, privacy=None, replayable=True) -> dict:
    raw = {
        "name": "bench-services",
        "data": {"dataset": "a9a"},
        "partition": {"columns": COLUMNS},
        "objective": {"loss": "logistic", "reduction": "sum", "lam": 1.0 if privacy else 0.001},
        "solver": {"name": "admm_sharing", "rho": 1.0, "epochs": epochs, "blas_threads": 1},
        "run": {"seed": 0, "eval_every": epochs},
    }
    if privacy:
        raw["privacy"] = {**privacy, "replayable_noise": replayable}
    return raw


def _ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    out = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return out


class _Deployment:
    """Two ``vfl party serve`` processes with their certificates, in a temporary directory."""

    def __init__(self, raw: dict, data_dir, work: Path):

        self.work, self.ports = work, _ports(2)
        certs = work / "certs"
        if not certs.exists():
            write_deployment(certs, 2)
        self.procs = []
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        if data_dir is not None:
            env["VFL_DATA_DIR"] = str(data_dir)
        for m, port in enumerate(self.ports, start=1):
            party = {
                **raw,
                "party": {
                    "index": m,
                    "listen": f"127.0.0.1:{port}",
                    "directory": str(work / f"party{m}"),
                    "tls": {
                        "certificate": str(certs / f"party-{m}.pem"),
                        "key": str(certs / f"party-{m}.key"),
                        "ca": str(certs / "ca.pem"),
                    },
                    "limits": {"max_epsilon": 8.0},
                },
            }
            path = work / f"party{m}.toml"
            path.write_text(dumps(party))
            self.procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "vfl.cli.main", "party", "serve", "--config", str(path)],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        for port in self.ports:
            _wait(port)
        self.run = {
            "backend": "services",
            "parties": [f"127.0.0.1:{p}" for p in self.ports],
            "tls": {
                "certificate": str(certs / "coordinator.pem"),
                "key": str(certs / "coordinator.key"),
                "ca": str(certs / "ca.pem"),
            },
        }

    def close(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(timeout=30)


def _wait(port: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"no party service on port {port} after {timeout:g} s")


def _run(raw: dict, data_dir, run: dict | None = None):

    config = config_from_dict({**raw, "run": {**raw["run"], **(run or {})}})
    if run is None:
        result = run_experiment(config, data_dir=data_dir, with_baselines=False)
        return result, None
    with ServiceUnits(config) as units:
        plan = plan_run(config, data_dir, units)
        result = run_experiment(config, data_dir=data_dir, plan=plan, with_baselines=False)
        noop = _noop(units)
    return result, noop


def _noop(units, n: int = 200) -> float:
    """Median seconds of a no-op unary call (Health) over the open mutual-TLS channel."""
    call = units.calls[0]["Health"]
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        call(b"", metadata=units._md())
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _per_epoch(result) -> float:
    return float(result.manifest.result.seconds_per_epoch)


def services_benchmark(quick: bool = False, data_dir=None) -> dict:
    epochs = 20 if quick else 60
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        plain = _raw(epochs)
        local, _ = _run(plain, data_dir)
        dep = _Deployment(plain, data_dir, work / "plain")
        try:
            remote, noop = _run(plain, data_dir, dep.run)
        finally:
            dep.close()
        same = bool(np.array_equal(local.coef, remote.coef))
        transport = remote.manifest.communication.transport.dump()
        timings = {}
        for label, replayable in (("simulation", True), ("deployment", False)):
            raw = _raw(epochs, PRIVATE, replayable)
            dep = _Deployment(raw, data_dir, work / label)
            try:
                timings[label], _ = _run(raw, data_dir, dep.run)
            finally:
                dep.close()
    row = {
        "dataset": "a9a",
        "parties": 2,
        "epochs": epochs,
        "inprocess_seconds_per_epoch": _per_epoch(local),
        "services_seconds_per_epoch": _per_epoch(remote),
        "ratio": _per_epoch(remote) / _per_epoch(local),
        "same_numbers": same,
        "tcp_bytes_per_epoch": transport["bytes_per_epoch"],
        "protocol_bytes_per_epoch": transport["protocol_bytes_per_epoch"],
        "noop_round_trip_ms": noop * 1e3,
        "simulation_seconds_per_epoch": _per_epoch(timings["simulation"]),
        "deployment_seconds_per_epoch": _per_epoch(timings["deployment"]),
    }
    row["deployment_ratio"] = row["deployment_seconds_per_epoch"] / row["simulation_seconds_per_epoch"]
    targets = {
        "services_epoch": {
            "description": "party services (gRPC, mutual TLS, localhost) / in-process, ADMM sharing on a9a, 2 parties",
            "ratio": row["ratio"],
            "threshold": 3.0,
            "pass": row["ratio"] <= 3.0,
            "comparison": "<=",
            "why": "",
        },
        "deployment_epoch": {
            "description": "deployment epoch (exact noise at each party) / simulation epoch, on the party services",
            "ratio": row["deployment_ratio"],
            "threshold": 2.0,
            "pass": row["deployment_ratio"] <= 2.0,
            "comparison": "<=",
            "why": "",
        },
        "services_same_numbers": {
            "description": "party services: the in-process numbers to the bit",
            "ratio": float(same),
            "threshold": 1.0,
            "pass": same,
            "comparison": ">=",
            "why": "",
        },
    }
    md = [
        "| case | s/epoch | ratio | target |",
        "|---|---:|---:|---|",
        f"| in-process | {row['inprocess_seconds_per_epoch']:.4f} | 1 | |",
        f"| party services (mTLS) | {row['services_seconds_per_epoch']:.4f} | {row['ratio']:.2f} | <= 3 |",
        f"| simulation, epsilon 8, services | {row['simulation_seconds_per_epoch']:.4f} | 1 | |",
        f"| deployment, epsilon 8, services | {row['deployment_seconds_per_epoch']:.4f} | "
        f"{row['deployment_ratio']:.2f} | <= 2 |",
    ]
    return {"cases": [row], "targets": targets, "markdown": "\n".join(md)}
