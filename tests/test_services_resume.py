"""Issue 39 on the party services: ``vfl run --resume RUN_DIR`` after the coordinator died.

The parties' servers run in this process (loopback, mutual TLS, :class:`test_services.Parties`);
the coordinator is ``vfl run`` in a process of its own, killed (SIGKILL) while party 2 holds
its reply of epoch 6: party 1 has released that epoch and party 2 releases it after the
coordinator is gone, both past the checkpoint of epoch 3. Resumed, the run replays to the
checkpoint and goes on; every release on a party's record is sent from there (never drawn or
charged again), fresh noise is drawn for the epochs after it alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from cli_helpers import assert_one_line_error, vfl
from test_services import _base, _numbers, _raw, _remote, _write_config, certs, parties  # noqa: F401

grpc = pytest.importorskip("grpc")


import vfl.experiments.records as records  # noqa: E402
import vfl.experiments.run_directory as run_directory  # noqa: E402
from vfl.admm.sharing.party import SHARING_PROTOCOL, PartySpec, Pull  # noqa: E402
from vfl.core import codec  # noqa: E402
from vfl.core.codec import Frame  # noqa: E402
from vfl.experiments.checkpoint import Checkpoint, RepeatState, write_checkpoint  # noqa: E402
from vfl.experiments.config import load_config  # noqa: E402
from vfl.experiments.runner import run_experiment  # noqa: E402
from vfl.experiments.transport.service_guard import Guard, PrivacyRefused  # noqa: E402
from vfl.experiments.transport.service_party import PartyService  # noqa: E402

EPOCHS, EVERY, KILL_AT = 8, 3, 6


def _captured(monkeypatch) -> list:
    written, write = [], records.write_run

    def keep(result, out, **kw):
        written.append(result)
        return write(result, out, **kw)

    monkeypatch.setattr(run_directory, "write_run", keep)
    return written


def _hold(monkeypatch, m: int, at: int):
    """Party m's service holds its ``at``-th update request until the event is set."""
    held, go = threading.Event(), threading.Event()
    call, count = PartyService.call, {"n": 0}

    def holding(self, frame, run, replay=False):
        if self.m == m and frame[4:7] == bytes([Frame.REQUEST, 0, 0]):  # a call 0: update
            count["n"] += 1
            if count["n"] == at:
                held.set()
                go.wait(30)
        return call(self, frame, run, replay)

    monkeypatch.setattr(PartyService, "call", holding)
    return held, go


def _kill_coordinator(tmp_path, monkeypatch, p, coord):
    path, out = tmp_path / "coord.toml", tmp_path / "run"
    _write_config(coord, path)
    held, go = _hold(monkeypatch, 2, KILL_AT)
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
            "--record-received",
        ],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert held.wait(60), proc.stderr.read().decode() if proc.poll() is not None else ""
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
        go.set()  # party 2 handles the request of the dead coordinator: a release it keeps
    monkeypatch.undo()
    deadline = time.monotonic() + 10
    while len(p.records(2)) < KILL_AT and time.monotonic() < deadline:
        time.sleep(0.02)
    checkpoint = json.loads((out / "checkpoint.json").read_text())
    assert checkpoint["repeats"][0]["epoch"] == EVERY
    return out, checkpoint


@pytest.mark.slow
@pytest.mark.parametrize("replayable", [False, True], ids=["deployment", "replayable"])
def test_a_killed_coordinator_resumes_a_services_run_without_drawing_a_release_again(
    tmp_path, parties, monkeypatch, replayable
):
    config = load_config(_base(tmp_path, epochs=EPOCHS, replayable=replayable))
    p = parties(config)
    coord = p.coordinator(config, f"run.checkpoint_every={EVERY}", "run.baselines='none'")
    out, checkpoint = _kill_coordinator(tmp_path, monkeypatch, p, coord)
    run = checkpoint["services"]["run"]
    assert [len(p.records(m)) for m in (1, 2)] == [KILL_AT, KILL_AT]  # past the checkpoint

    written = _captured(monkeypatch)
    proc = vfl("run", "--resume", out, "--quiet")
    assert proc.returncode == 0, proc.stderr
    (resumed,) = written
    m = resumed.metrics
    assert m["epoch"].tolist() == list(range(EPOCHS + 1))
    assert resumed.manifest.dump()["backend"]["run"] == run
    assert resumed.manifest.dump()["backend"]["resumed"] == {"party 1": KILL_AT, "party 2": KILL_AT}
    for party in (1, 2):  # each release once on the party's record, and the same epsilon
        recs = [r for r in p.records(party) if r["run"] == run]
        assert [r["release"] for r in recs] == list(range(1, EPOCHS + 1))
        assert len({r["request"] for r in recs}) == EPOCHS
        np.testing.assert_allclose([r["epsilon_run"] for r in recs], m["epsilon_tight"].iloc[1:], rtol=1e-12)
        assert not list((tmp_path / f"party{party}" / "replies").glob(f"{run}-*"))  # let go
    if replayable:  # the numbers of an unbroken run, to the bit
        unbroken = run_experiment(config.with_overrides(["run.baselines='none'"]), with_baselines=False)
        assert _numbers(m).equals(_numbers(unbroken.metrics))
        np.testing.assert_array_equal(resumed.coef, unbroken.coef)
    else:  # the unbroken run's epsilon; a model scored once, at the end
        unbroken = _remote(p.coordinator(config))
        assert m["epsilon_tight"].iloc[-1] == unbroken.metrics["epsilon_tight"].iloc[-1]
        assert np.isfinite(m["test_logloss"].iloc[-1])
        # what party 2 received over the whole run (replayed rounds included): attacked
        got = vfl("attack", out, "--attack", "label-direction", "--json")
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["ceiling"] is None  # no label guarantee
        assert resumed.manifest.dump()["received"]["arrays"]["labels_party2"] == [300, EPOCHS]


def test_a_party_restarted_with_another_budget_is_refused_in_one_line(tmp_path, parties):
    config = load_config(_base(tmp_path, replayable=False))
    p = parties(config)
    coord = p.coordinator(config)
    facts = [json.loads(PartyService(p.pc(m), config).health()) for m in (1, 2)]
    facts[1]["limits"] = {**facts[1]["limits"], "budget_epsilon": 50.0}  # what it had then
    write_checkpoint(
        tmp_path / "run",
        Checkpoint(
            config=coord.to_dict(),
            options={},
            released={"events": 2, "epsilon": 1.0},
            repeats=[RepeatState(epoch=1, rows=[], elapsed=0.0, digest="")],
            services={"run": "r1", "parties": facts},
        ),
    )
    proc = vfl("run", "--resume", tmp_path / "run")
    assert_one_line_error(
        proc,
        f"party 2 at {p.addresses()[1]} was restarted with another "
        "config: its party.limits.budget_epsilon is 100.0, the run's "
        "checkpoint says 50.0",
    )
    assert p.records(1) == [] and p.records(2) == []


def test_a_party_keeps_each_released_reply_and_refuses_what_it_cannot_send_again(tmp_path):
    """The guard's record: a kept reply comes back; one admitted but not kept (the party
    stopped while drawing) is never drawn again; a finished run's replies are let go; a
    restarted party's record of a run goes on where it was."""

    kw = dict(floor=1.0, sensitivity=1.0, delta=1e-5, accountant="pld", budget=None, deployment=True)
    g = Guard(tmp_path, 2, **kw)
    for seq, request in ((1, "a1"), (2, "b2")):
        g.admit(run="r", repeat=0, seq=seq, scale=2.0, sensitivity=1.0, size=10, exact=True, request=request)
    g.keep("r", 0, "a1", b"reply-1")
    again = Guard(tmp_path, 2, **kw)  # restarted
    assert again.recorded("r", 0, "a1") == b"reply-1" and again.recorded("r", 0, "zz") is None
    assert again.summary("r") == {"releases": 2, "epsilon": g.epsilon("r"), "last_seq": 2}
    with pytest.raises(PrivacyRefused, match="drawn already and its value was not kept"):
        again.recorded("r", 0, "b2")
    with pytest.raises(PrivacyRefused, match="drawn already"):  # under a new number too
        again.admit(run="r", repeat=0, seq=9, scale=2.0, sensitivity=1.0, size=10, exact=True, request="b2")
    again.forget("r")
    assert not list((tmp_path / "replies").iterdir())


def test_a_resumed_request_that_is_not_on_the_record_is_refused_and_nothing_drawn(tmp_path, parties, certs):
    """The coordinator marks the requests it replays; one the party has no release of (a
    replay that differs from the run) is refused, never drawn."""

    p = parties(load_config(_base(tmp_path, replayable=False)))
    md = (("vfl-run", "r1"), ("vfl-replay", "1"))
    with _raw(p.addresses()[0], certs) as ch:
        spec = PartySpec(
            lam=0.01,
            rho=0.4,
            factor=True,
            x_radius=1.0,
            ball="project",
            noise_form="output",
            share_clip=1.0,
            blas_threads=1,
        )
        codec.read(
            SHARING_PROTOCOL,
            ch.unary_unary("/vfl.Party/Open")(codec.open_frame(SHARING_PROTOCOL, 0, spec), timeout=5, metadata=md),
        )
        frame = codec.encode(Frame.REQUEST, 0, 1, Pull(r=np.zeros(300), rho=0.4, sigma=30.0, sensitivity=1.0))
        with pytest.raises(codec.ERRORS, match="none of the releases on the party's record"):
            codec.read(SHARING_PROTOCOL, ch.unary_unary("/vfl.Party/Call")(frame, timeout=5, metadata=md))
    assert p.records(1) == []
