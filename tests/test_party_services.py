"""Party files in the party services (issues 34 and 36): each party service reads its own
file alone, the PSI crosses the authenticated party channel, and the coordinator (the label
holder) reads party 1's file alone; the numbers are the in-process party-file run's.

Each party's config names only its own file: the other parties' paths in it lead nowhere,
so a read of another party's file would fail the test.
"""

from __future__ import annotations

import json
import threading

import numpy as np
import pandas as pd
import pytest
from cli_helpers import assert_one_line_error, vfl

grpc = pytest.importorskip("grpc")


from test_services import _free_ports, _numbers, _remote, _tls, _write_config  # noqa: E402

from vfl.core.errors import DataError  # noqa: E402
from vfl.datasets.parties import party_table  # noqa: E402
from vfl.datasets.parties.align import align_with  # noqa: E402
from vfl.datasets.parties.psi import pack  # noqa: E402
from vfl.experiments.config import config_from_dict, load_config  # noqa: E402
from vfl.experiments.party_sides import OwnParty, RemotePeer, frame  # noqa: E402
from vfl.experiments.registry import get_solver  # noqa: E402
from vfl.experiments.run_plan import plan_run  # noqa: E402
from vfl.experiments.runner import run_experiment  # noqa: E402
from vfl.experiments.summary import run_summary  # noqa: E402
from vfl.experiments.transport.dask_units import dask_backend  # noqa: E402
from vfl.experiments.transport.party_config import PartyConfig  # noqa: E402
from vfl.experiments.transport.service_grpc import serve  # noqa: E402
from vfl.experiments.transport.service_party import PartyService  # noqa: E402
from vfl.experiments.transport.service_units import ServiceUnits  # noqa: E402

CONFIG = """
name = "ps"
[data]
dataset = "parties"
test_fraction = 0.25
[data.alignment]
min_rows = 20
[[data.party]]
path = "{p1}"
id = "cid"
label = "y"
labels = [0, 1]
[[data.party]]
path = "{p2}"
id = "cid"
[preprocessing]
scaling = "clip"
bounds = [-4.0, 4.0]
normalize_rows = true
[objective]
lam = 0.01
[solver]
name = "{solver}"
epochs = {epochs}
{solver_extra}
[privacy]
delta = 1e-5
epsilon = 8.0
{privacy_extra}
replayable_noise = true
[run]
baselines = "none"
"""
SHARING = {
    "solver": "admm_sharing",
    "epochs": 3,
    "solver_extra": "rho = 0.4\nblas_threads = 1",
    "privacy_extra": 'form = "output"\ncalibration = "sound"\nneighbours = "row"\n'
    "b1 = 1.0\nclip = 1.0\ninput_clip = 2.0",
}
STACKING = {"solver": "private_stacking", "epochs": 1, "solver_extra": "", "privacy_extra": ""}


def _files(d, n=160, seed=0):
    """Two party files over ``n`` people (80 % of them in both), each in its own order."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(10**6, size=n, replace=False)
    X = rng.normal(size=(n, 5))
    y = (X @ np.array([1.0, -1.0, 0.5, 0.5, -0.5]) > 0).astype(int)
    for m, cols in ((1, [0, 1]), (2, [2, 3, 4])):
        keep = rng.permutation(n)[: int(0.9 * n)]
        frame = {"cid": ids[keep], **{f"x{j}": X[keep, j] for j in cols}}
        if m == 1:
            frame["y"] = y[keep]
        pd.DataFrame(frame).to_csv(d / f"p{m}.csv", index=False)


def _config(d, who: int | None, name: str, **kw):
    """The config as party ``who`` holds it (None: every file, the in-process run): the
    other parties' paths lead nowhere."""
    paths = {m: str(d / f"p{m}.csv") if who in (None, m) else f"/nowhere/p{m}.csv" for m in (1, 2)}
    path = d / name
    path.write_text(CONFIG.format(p1=paths[1], p2=paths[2], **{**SHARING, **kw}))
    return load_config(path)


def _serve(tmp_path, certs, kw, parties=(1, 2), config_of=None, limits=None):
    ports = _free_ports(len(parties))
    servers = []
    for m, port in zip(parties, ports):
        config = (config_of or {}).get(m) or _config(tmp_path, m, f"party{m}.toml", **kw)
        servers.append(
            serve(
                PartyService(
                    PartyConfig(
                        index=m,
                        listen=f"127.0.0.1:{port}",
                        directory=str(tmp_path / f"party{m}"),
                        tls=_tls(certs, f"party-{m}"),
                        limits=limits or {"max_epsilon": 8.0},
                    ),
                    config,
                )
            )
        )
    return servers, [f"127.0.0.1:{p}" for p in ports]


def _coordinator(config, certs, addresses):
    tls = _tls(certs, "coordinator")
    return config.with_overrides(
        [
            "run.backend=services",
            "run.parties=[" + ",".join(f"'{a}'" for a in addresses) + "]",
            "run.tls={" + ", ".join(f"{k}='{v}'" for k, v in tls.items()) + "}",
        ]
    )


def test_party_files_in_the_services_give_the_in_process_numbers_and_the_psi_crosses(tmp_path, deployment_certs):
    _files(tmp_path)
    servers, addresses = _serve(tmp_path, deployment_certs, {})
    try:
        coord = _coordinator(_config(tmp_path, 1, "coord.toml"), deployment_certs, addresses)
        remote = _remote(coord)
    finally:
        for s in servers:
            s.stop(None).wait()
    local = run_experiment(_config(tmp_path, None, "local.toml"), with_baselines=False)
    assert _numbers(remote.metrics).equals(_numbers(local.metrics))
    # the PSI's messages are the protocol's, the same count as in-process, and TCP carried them
    comm = [c[c["phase"] == "alignment"].reset_index(drop=True) for c in (remote.communication, local.communication)]
    assert comm[0].equals(comm[1]) and comm[0]["sent_messages"].sum() > 0
    assert remote.manifest.dump()["communication"]["transport"]["phases"]["alignment"]["tcp_bytes"] > int(
        comm[0]["sent_bytes"].sum()
    )
    # the coordinator read party 1's file alone
    files = remote.manifest.dump()["dataset"]["provenance"]["parties"]
    assert [f["party"] for f in files] == [1]
    assert remote.manifest.dump()["dataset"]["n_train"] == local.manifest.dump()["dataset"]["n_train"]


@pytest.mark.parametrize(
    "case, says",
    [
        ("schema", "another schema: its [data] differs"),
        ("id", "party 2 (p2.csv)"),
        ("rows", "share 10 ID(s), below data.alignment.min_rows = 20"),
    ],
)
def test_a_party_file_that_does_not_match_is_one_line_naming_the_party(tmp_path, deployment_certs, case, says):
    _files(tmp_path)
    coord = _config(tmp_path, 1, "coord.toml")
    if case == "schema":  # party 2 was started with other columns of its own
        _config(tmp_path, 2, "party2.toml")
        path = tmp_path / "party2.toml"
        path.write_text(path.read_text().replace('p2.csv"\nid = "cid"', 'p2.csv"\nid = "cid"\nfeatures = ["x2", "x3"]'))
        servers, addresses = _serve(tmp_path, deployment_certs, {}, config_of={2: load_config(path)})
    elif case == "rows":  # party 2 holds 10 of party 1's IDs
        p1 = pd.read_csv(tmp_path / "p1.csv")
        p2 = pd.read_csv(tmp_path / "p2.csv")
        p2[~p2["cid"].isin(p1["cid"])].head(5).pipe(
            lambda f: pd.concat([f, p2[p2["cid"].isin(p1["cid"])].head(10)])
        ).to_csv(tmp_path / "p2.csv", index=False)
        servers, addresses = _serve(tmp_path, deployment_certs, {})
    else:  # party 2's file has no column "cid": the service refuses to start
        pd.read_csv(tmp_path / "p2.csv").rename(columns={"cid": "key"}).to_csv(tmp_path / "p2.csv", index=False)
        path = tmp_path / "party2.toml"
        _config(tmp_path, 2, "party2.toml")
        text = path.read_text() + (
            '\n[party]\nindex = 2\ninsecure = true\nlisten = "127.0.0.1:1"\n[party.limits]\nmax_epsilon = 8.0\n'
        )
        path.write_text(text)
        proc = vfl("party", "serve", "--config", path)
        assert_one_line_error(proc, says)
        return
    try:
        path = tmp_path / "run.toml"
        _write_config(_coordinator(coord, deployment_certs, addresses), path)
        proc = vfl("run", "--config", path, "--out", tmp_path / "run", "--quiet")
    finally:
        for s in servers:
            s.stop(None).wait()
    assert_one_line_error(proc, f"party 2 at {addresses[1]}", says)
    assert not (tmp_path / "run").exists()


def test_party_files_on_dask_each_worker_reads_its_own_file_to_the_same_numbers(tmp_path, monkeypatch):
    distributed = pytest.importorskip("dask.distributed")

    _files(tmp_path)
    config = _config(tmp_path, None, "local.toml")
    local = run_experiment(config, with_baselines=False)
    read = []
    real = party_table.load_party
    monkeypatch.setattr(party_table, "load_party", lambda spec, **kw: read.append(spec.index) or real(spec, **kw))
    dask = config.with_overrides(["run.backend=dask"])
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=False,
            protocol="tcp://",
            host="127.0.0.1",
            dashboard_address=None,
        ) as c,
        dask_backend(dask, c.scheduler_address, None) as backend,
    ):
        remote = run_experiment(dask, plan=plan_run(dask, None, backend), with_baselines=False)
    assert _numbers(remote.metrics).equals(_numbers(local.metrics))
    # party 1's file by the coordinator and by party 1's worker, party 2's by its worker
    assert sorted(read) == [1, 1, 2]
    comm = [c[c["phase"] == "alignment"].reset_index(drop=True) for c in (remote.communication, local.communication)]
    assert comm[0].equals(comm[1])


@pytest.mark.slow
def test_a_party_restarted_mid_run_is_told_its_agreed_rows_again_to_the_same_numbers(tmp_path, deployment_certs):
    _files(tmp_path)
    servers, addresses = _serve(tmp_path, deployment_certs, {"epochs": 4})
    port = int(addresses[1].rpartition(":")[2])

    def restart():
        servers[1] = serve(
            PartyService(
                PartyConfig(
                    index=2,
                    listen=f"127.0.0.1:{port}",
                    directory=str(tmp_path / "party2"),
                    tls=_tls(deployment_certs, "party-2"),
                    limits={"max_epsilon": 8.0},
                ),
                _config(tmp_path, 2, "party2.toml", epochs=4),
            )
        )

    state = {"updates": 0, "done": False}
    try:
        coord = _coordinator(_config(tmp_path, 1, "coord.toml", epochs=4), deployment_certs, addresses).with_overrides(
            ["run.party_wait=10"]
        )
        with ServiceUnits(coord) as units:
            send = units._send

            def watched(session, call, requests, seqs):
                state["updates"] += call.name == "update"
                if not state["done"] and call.name == "update" and state["updates"] == 3:
                    state["done"] = True
                    servers[1].stop(None).wait()
                    threading.Timer(0.2, restart).start()
                return send(session, call, requests, seqs)

            units._send = watched
            remote = run_experiment(coord, plan=plan_run(coord, None, units), with_baselines=False)
    finally:
        for s in servers:
            s.stop(None).wait()
    local = run_experiment(_config(tmp_path, None, "local.toml", epochs=4), with_baselines=False)
    assert state["done"] and [r["party"] for r in remote.manifest.dump()["backend"]["recoveries"]] == [2]
    assert _numbers(remote.metrics).equals(_numbers(local.metrics))


def _records(tmp_path, m):
    path = tmp_path / f"party{m}" / "releases.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_private_stackings_passive_party_is_a_service_that_calibrates_and_records_its_own_noise(
    tmp_path, deployment_certs
):
    _files(tmp_path)
    servers, addresses = _serve(tmp_path, deployment_certs, STACKING, parties=(2,))
    try:
        coord = _coordinator(_config(tmp_path, 1, "coord.toml", **STACKING), deployment_certs, addresses)
        remote = _remote(coord)
    finally:
        for s in servers:
            s.stop(None).wait()
    local = run_experiment(_config(tmp_path, None, "local.toml", **STACKING), with_baselines=False)
    assert _numbers(remote.metrics).equals(_numbers(local.metrics))
    recs = _records(tmp_path, 2)  # its model, its shares and their moments, each on record
    assert len(recs) == 3 and len({r["sensitivity"] for r in recs}) == 3
    # the party's own ledger and the coordinator's: the same epsilon after the round
    np.testing.assert_allclose(recs[-1]["epsilon_run"], remote.metrics["epsilon_tight"].iloc[-1], rtol=1e-9)


#: DP-ADMM (Huang et al. 2019, Algorithm 3) on 3 providers, two repeats (a fresh deal each)
PROVIDERS = {
    "name": "providers",
    "data": {"dataset": "synthetic", "options": {"n_train": 200, "n_test": 60, "n_features": 5, "seed": 2}},
    "preprocessing": {"row_clip": 1.0},
    "partition": {"agents": 3, "samples_per_agent": 30, "public": 40, "held_out": "test_part"},
    "objective": {"lam": 0.17, "reduction": "unit_mean", "regularizer": "half_l2sq"},
    "solver": {"name": "dp_admm", "epochs": 4},
    "privacy": {"epsilon": 1.0, "delta": 1e-3, "replayable_noise": True},
    "run": {"repeats": 2, "baselines": "none"},
}


def test_dp_admms_providers_are_services_that_calibrate_their_own_noise_over_two_repeats(tmp_path, deployment_certs):
    config = config_from_dict(PROVIDERS)
    ports = _free_ports(3)
    servers = [
        serve(
            PartyService(
                PartyConfig(
                    index=m,
                    listen=f"127.0.0.1:{port}",
                    directory=str(tmp_path / f"party{m}"),
                    tls=_tls(deployment_certs, f"party-{m}"),
                    limits={"max_epsilon": 1.0},
                ),
                config,
            )
        )
        for m, port in zip((1, 2, 3), ports)
    ]
    try:
        coord = _coordinator(config, deployment_certs, [f"127.0.0.1:{p}" for p in ports])
        remote = _remote(coord)
    finally:
        for s in servers:
            s.stop(None).wait()
    local = run_experiment(config, with_baselines=False)
    assert _numbers(remote.metrics).equals(_numbers(local.metrics))
    assert _numbers(remote.repeats).equals(_numbers(local.repeats))
    for m in (1, 2, 3):  # every provider's releases, each on its own record: 4 per repeat
        recs = _records(tmp_path, m)
        assert [r["repeat"] for r in recs] == [0] * 4 + [1] * 4

    summary = run_summary(remote, tmp_path / "run", 1.0)
    assert "TCP connections to the party services" in summary and "workers" not in summary


def test_a_party_answers_the_psi_in_typed_frames_and_never_realigns(tmp_path):
    _files(tmp_path)
    cls = get_solver("admm_sharing")
    own = OwnParty(_config(tmp_path, 2, "party2.toml"), 2, strict=False)
    one = OwnParty(_config(tmp_path, 1, "party1.toml"), 1, strict=False)
    call = lambda data: own.serve(data, cls)  # noqa: E731
    got = align_with(
        (one.who, one.table.train.ids, one.table.id_type),
        [RemotePeer(own.who, own.table.id_type, "train", call)],
        seed=0,
    )
    # its block: the aligned rows, the test rows held out of them (test_fraction)
    assert own.aligned and own.rows_n + own.test_rows == got.size
    with pytest.raises(DataError, match="aligned already"):
        call(frame("psi", "train", pack("request", 32, bytes(32))))
    with pytest.raises(ValueError, match="unknown step"):
        call(pack("step", 1, bytes([9, 0])))
