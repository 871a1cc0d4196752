"""One file per party, rows aligned by a private set intersection (issue 36, items 1-4).

Each party's file is read by that party alone; the label holder's PSI with every
other party finds exactly the common IDs; the joined rows agree ID by ID, in an
order that follows no ID; bad input is one line naming the party, exit 2, nothing
written; a9a from two party files (80 % overlap, shuffled) trains the same model as
the single file restricted to the intersection rows, bit for bit.
"""

from __future__ import annotations

import bz2
import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import assert_one_line_error, invoke
from shipped import ALL, write_breast_cancer

from vfl.core.errors import DataError
from vfl.core.solver import Setting
from vfl.datasets.loaders import load_raw
from vfl.datasets.parties.align import agreed_order, order_key
from vfl.datasets.parties.psi import PsiClient, PsiServer, pack, protocol_bytes, unpack
from vfl.datasets.parties.split import deal
from vfl.experiments.config import config_from_dict, load_config, read_toml
from vfl.experiments.partyfiles import split_config
from vfl.experiments.runner import run_experiment

REPO = Path(__file__).resolve().parents[1]


def _write(d: Path, n=300, seed=0, parties=3, share=(1.0, 0.8, 0.7)) -> list[np.ndarray]:
    """``parties`` CSV files over ``n`` people; party m's one feature is m times the
    person's number, so a joined row is right exactly when its features agree."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(10**6, size=n, replace=False)
    x = rng.normal(size=n)
    held = []
    for m in range(parties):
        keep = np.sort(rng.permutation(n)[: int(share[m] * n)])
        frame = {"cid": ids[keep], f"x{m + 1}": (m + 1) * x[keep]}
        if m == 0:
            frame["y"] = (x[keep] > 0).astype(int)
        pd.DataFrame(frame).sample(frac=1, random_state=m).to_csv(d / f"p{m + 1}.csv", index=False)
        held.append(set(ids[keep].tolist()))
    return held


def _options(parties=3, **extra):
    table = [{"path": f"p{m + 1}.csv", "id": "cid", **({"label": "y"} if m == 0 else {})} for m in range(parties)]
    return {"party": table, "test_fraction": 0.25, **extra}


def _config(d: Path, parties=2, extra="", party_extra=("", "", "")) -> Path:
    text = 'name = "pt"\n[data]\ndataset = "parties"\ntest_fraction = 0.25\n' + extra
    for m in range(parties):
        text += f'\n[[data.party]]\npath = "p{m + 1}.csv"\nid = "cid"\n'
        text += 'label = "y"\n' if m == 0 else ""
        text += party_extra[m]
    text += '\n[objective]\nlam = 0.01\n[solver]\nepochs = 3\n[run]\nbaselines = "none"\n'
    path = d / "parties.toml"
    path.write_text(text)
    return path


# ---------------------------------------------------------------- the protocol --


def test_psi_finds_exactly_the_common_ids_and_messages_are_typed():
    client_ids = [str(i) for i in range(0, 3000, 3)]
    server_ids = [str(i) for i in range(0, 3000, 5)]
    client, server = PsiClient(client_ids, "integer"), PsiServer(server_ids, "integer")
    request, setup = client.request(), server.setup()
    response = server.respond(request)
    mask = client.intersect(setup, response)
    assert {client_ids[i] for i in np.flatnonzero(mask)} == set(client_ids) & set(server_ids)
    # the bytes: 32 per point of U and W, the tag width per entry of V, a 16-byte header each
    total = len(request) + len(setup) + len(response)
    assert total == protocol_bytes(len(client_ids), len(server_ids)) + 3 * 16
    # a message of another kind, a truncated one or a pickle is refused, never interpreted
    with pytest.raises(ValueError, match="unexpected message"):
        server.respond(setup)
    with pytest.raises(ValueError, match="do not hold"):
        server.respond(request[:-5])

    with pytest.raises(ValueError):
        unpack(pickle.dumps(["respond", "__getattribute__"]), "request", 32)
    with pytest.raises(ValueError):
        pack("request", 32, b"x" * 33)


def test_three_parties_align_row_by_row_in_an_order_no_id_decides(tmp_path, monkeypatch):
    held = _write(tmp_path)
    monkeypatch.chdir(tmp_path)
    raw = load_raw("parties", options=_options(alignment={"seed": 7}))
    common = held[0] & held[1] & held[2]
    assert raw.train.n_rows + raw.test.n_rows == len(common)
    assert raw.parties == (("x1",), ("x2",), ("x3",))
    for part in (raw.train, raw.test):
        x1, x2, x3 = (part.column(f"x{m}") for m in (1, 2, 3))
        np.testing.assert_allclose(x2, 2 * x1)
        np.testing.assert_allclose(x3, 3 * x1)
    np.testing.assert_array_equal(raw.y_train, np.where(raw.train.column("x1") > 0, 1.0, -1.0))
    # the agreed order is the tags' under the seed's key: the same for the same seed
    again = load_raw("parties", options=_options(alignment={"seed": 7}))
    np.testing.assert_array_equal(again.train.column("x1"), raw.train.column("x1"))
    other = load_raw("parties", options=_options(alignment={"seed": 8}))
    assert not np.array_equal(other.train.column("x1"), raw.train.column("x1"))
    rec = raw.provenance["alignment"]["train"]
    assert rec["intersection"] == len(common)
    assert [p["held_by_both"] for p in rec["pairs"]] == [len(held[0] & held[1]), len(held[0] & held[2])]
    # every message counted: the PSI at the protocol's own size (+ headers), then the key and
    # the tags of the intersection to each party
    assert rec["bytes"] == rec["psi_protocol_bytes"] + 3 * 16 * 2 + rec["agreement_bytes"]
    assert rec["agreement_bytes"] == 2 * (16 + 32 + 16 + 16 * len(common))


def test_agreed_order_follows_no_id_value():
    ids = [str(i) for i in range(1000)]
    order = agreed_order(order_key(0), ids)
    assert sorted(order.tolist()) == list(range(1000))
    assert abs(np.corrcoef(order, np.arange(1000))[0, 1]) < 0.1


def test_a_run_records_the_alignment(tmp_path, monkeypatch):
    _write(tmp_path, parties=2)
    monkeypatch.chdir(tmp_path)
    result = invoke("run", "--config", _config(tmp_path), "--out", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    comm = pd.read_csv(tmp_path / "run" / "communication.csv")
    aligned = comm[comm["phase"] == "alignment"]
    assert aligned["sent_messages"].tolist() == [0, 3, 2]  # hub, the label holder, party 2
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    rec = man["dataset"]["provenance"]["alignment"]["train"]
    assert man["communication"]["alignment"]["bytes"] == int(aligned["sent_bytes"].sum())
    assert "X25519" in rec["protocol"]
    assert man["dataset"]["n_train"] + man["dataset"]["n_test"] == rec["intersection"]
    assert [p["n_columns"] for p in man["partition"]] == [1, 1]


# -------------------------------------------------------------------- bad input --


@pytest.mark.parametrize(
    "case, fragments",
    [
        ("duplicate", ("party 2 (p2.csv)", "occurs more than once")),
        ("missing_id", ("party 2 (p2.csv) line", "missing ID")),
        ("no_id_column", ("party 2 (p2.csv)", "ID column 'cid' not found")),
        ("types", ("party 2 (p2.csv)", "strings but party 1's are integers")),
        ("disjoint", ("party 2 (p2.csv)", "shares no ID with party 1")),
        ("min_rows", ("party 2 (p2.csv)", "below data.alignment.min_rows = 100000")),
        ("schema", ("party 2 (p2.csv)", "'income' not in the file")),
    ],
)
def test_bad_input_is_one_line_naming_the_party_and_nothing_is_written(tmp_path, monkeypatch, case, fragments):
    _write(tmp_path, parties=2)
    monkeypatch.chdir(tmp_path)
    p2 = pd.read_csv(tmp_path / "p2.csv", dtype=str)
    extra, party2 = "", ""
    if case == "duplicate":
        p2.loc[5, "cid"] = p2.loc[9, "cid"]
    elif case == "missing_id":
        p2.loc[5, "cid"] = ""
    elif case == "no_id_column":
        p2 = p2.rename(columns={"cid": "customer"})
    elif case == "types":
        p2["cid"] = "C" + p2["cid"]
    elif case == "disjoint":
        p2["cid"] = (p2["cid"].astype(int) + 10**7).astype(str)
    elif case == "min_rows":
        extra = "[data.alignment]\nmin_rows = 100000\n"
    elif case == "schema":
        party2 = 'features = ["income"]\n'
    p2.to_csv(tmp_path / "p2.csv", index=False)
    out = tmp_path / "run"
    result = invoke("run", "--config", _config(tmp_path, extra=extra, party_extra=("", party2)), "--out", out)
    assert_one_line_error(result, *fragments)
    assert not out.exists()


def test_config_refusals(tmp_path):
    _write(tmp_path, parties=2)
    base = _config(tmp_path).read_text()
    cases = [
        (
            base.replace("[objective]", "[partition]\ncolumns = [1, 1]\n[objective]"),
            "partition.columns: with party files each party holds the columns of its own file",
        ),
        (base.replace('label = "y"\n', ""), "party 1 (p1.csv): label is required"),
        (
            base.replace('id = "cid"\n\n[objective]', 'id = "cid"\nlabel = "y"\n\n[objective]'),
            "only party 1, the label holder, holds the labels",
        ),
        (base.replace("test_fraction = 0.25\n", ""), "party 1 (p1.csv): needs test_path"),
        (
            base.replace('path = "p2.csv"\nid = "cid"\n', 'path = "p2.libsvm"\nid = "cid"\n'),
            "id applies to a CSV party file, not to libsvm",
        ),
        (
            base.replace("[run]\n", '[run]\nbackend = "dask"\n').replace(
                "test_fraction = 0.25\n", "test_fraction = 0.25\nstratify = true\n"
            ),
            "run.backend = 'dask' with party files: data.stratify = true would need every party's labels",
        ),
    ]
    for text, fragment in cases:
        path = tmp_path / "bad.toml"
        path.write_text(text)
        assert_one_line_error(invoke("run", "--config", path, "--out", tmp_path / "x"), fragment)
    path = tmp_path / "bad.toml"
    path.write_text(base.replace("epochs = 3", 'name = "dp_admm"\nepochs = 3'))
    assert_one_line_error(invoke("run", "--config", path), "is for vertical solvers")


def test_a_private_run_reads_party_files_record_by_record(tmp_path, monkeypatch):
    _write(tmp_path, parties=2)
    monkeypatch.chdir(tmp_path)
    p2 = pd.read_csv(tmp_path / "p2.csv", dtype=str)
    p2.loc[3, "x2"] = "not a number"  # a malformed field: the public default, not a stop
    p2.to_csv(tmp_path / "p2.csv", index=False)
    private = (
        '\n[privacy]\ndelta = 1e-5\nepsilon = 8.0\ncalibration = "sound"\n'
        'neighbours = "row"\nb1 = 1.0\nclip = 1.0\ninput_clip = 2.0\n'
    )
    config = _config(tmp_path).read_text().replace("[run]", private + "[run]")
    config = config.replace(
        "[objective]", '[preprocessing]\nscaling = "clip"\nbounds = [-5.0, 5.0]\nnormalize_rows = true\n[objective]'
    )
    path = tmp_path / "private.toml"
    path.write_text(config)
    # the labels are read off the records unless declared
    assert_one_line_error(
        invoke("run", "--config", path, "--out", tmp_path / "r0"),
        "party 1 (p1.csv): the two label values would be read off the records",
    )
    path.write_text(config.replace('label = "y"\n', 'label = "y"\nlabels = [0, 1]\n'))
    strict = invoke("run", "--config", tmp_path / "parties.toml", "--out", tmp_path / "r1")
    assert_one_line_error(strict, "p2.csv", "non-numeric value 'not a number'")
    result = invoke("run", "--config", path, "--out", tmp_path / "r2")
    assert result.returncode == 0, result.stderr
    man = json.loads((tmp_path / "r2" / "manifest.json").read_text())
    assert "aligned by PSI" in man["privacy"]["neighbouring"] or "PSI alignment" in man["privacy"]["neighbouring"]
    # the training files' bytes are diagnostic: not in the released part of the manifest
    files = [p["files"]["train"] for p in man["dataset"]["provenance"]["parties"]]
    assert all("sha256" not in f and "size" not in f for f in files)
    assert man["diagnostic"]["dataset"]["provenance"]["repairs"]["party 2 train"]["fields_missing"] == {"x2": 1}


def test_libsvm_party_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.libsvm").write_text("101 1 1:0.5 2:1\n102 -1 2:0.25\n103 1 1:1\n")
    (tmp_path / "b.libsvm").write_text("# comment\n103 3:1\n101 3:2 4:1\n104 4:1\n")
    options = {
        "party": [{"path": "a.libsvm", "indices": [1, 2]}, {"path": "b.libsvm", "indices": [3, 4]}],
        "test_fraction": 0.5,
        "alignment": {"seed": 0},
    }
    raw = load_raw("parties", options=options)
    rows = {tuple(r) for r in np.vstack([raw.train.numeric.toarray(), raw.test.numeric.toarray()]).tolist()}
    assert rows == {(0.5, 1.0, 2.0, 1.0), (1.0, 0.0, 1.0, 0.0)}
    assert raw.train.names == ("f1", "f2", "f3", "f4")
    (tmp_path / "b.libsvm").write_text("103 3:1\n101 5:2\n")
    with pytest.raises(
        DataError,
        match=r"party 2 \(b.libsvm\) line 2: feature index 5 is "
        r"outside the party's indices \[3, 4\]",
    ):
        load_raw("parties", options=options)


# ------------------------------------------------------------------------ split --


def test_split_a_csv_and_run_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(1)
    n = 400
    frame = pd.DataFrame(
        {"a": rng.normal(size=n), "b": rng.choice(["u", "v"], n), "c": rng.normal(size=n), "d": rng.normal(size=n)}
    )
    frame["y"] = (frame["a"] + frame["c"] > 0).astype(int)
    frame.to_csv("data.csv", index=False)
    result = invoke(
        "datasets",
        "split",
        "data.csv",
        "--label",
        "y",
        "--parties",
        "2",
        "--overlap",
        "0.8",
        "--seed",
        "3",
        "--out",
        "parts",
    )
    assert result.returncode == 0, result.stderr
    p1, p2 = pd.read_csv("parts/party1.csv"), pd.read_csv("parts/party2.csv")
    assert list(p1.columns) == ["id", "label", "a", "b"] and list(p2.columns) == ["id", "c", "d"]
    shared = set(p1["id"]) & set(p2["id"])
    assert len(shared) == round(0.8 * n)
    assert not p1["id"].is_monotonic_increasing  # shuffled
    # a row's values are the file's row's, to the bit
    row = frame.iloc[int(np.flatnonzero(frame["a"] == p1["a"].iloc[0])[0])]
    assert row["b"] == p1["b"].iloc[0]
    run = invoke("run", "--config", "parts/config.toml", "--out", "run", "--epochs", "3")
    assert run.returncode == 0, run.stderr
    again = invoke("datasets", "split", "data.csv", "--label", "y", "--out", "parts")
    assert_one_line_error(again, "parts exists; pass --overwrite")
    assert_one_line_error(invoke("datasets", "split", "data.csv", "--out", "p3"), "needs --label")


@pytest.mark.slow
@pytest.mark.data
def test_a9a_from_two_party_files_trains_the_same_model_bit_for_bit(
    tmp_path, monkeypatch, data_dir, one_psi_per_id_list
):
    """a9a as two party files (80 % overlap, shuffled), aligned and trained: the model of the
    single-file run on the intersection rows (in the agreed order), bit for bit."""

    monkeypatch.chdir(tmp_path)
    written = split_config(REPO / "configs" / "a9a.toml", overlap=0.8, seed=0, out=tmp_path / "parts")
    lines = {
        p: bz2.decompress((data_dir / f"{p}.bz2").read_bytes()).split(b"\n")
        if (data_dir / f"{p}.bz2").exists()
        else (data_dir / p).read_bytes().split(b"\n")
        for p in ("a9a", "a9a.t")
    }
    train = [line for line in lines["a9a"] if line]
    ids, rows = deal(len(train), 2, 0.8, np.random.default_rng(0))
    common = [str(i) for i in np.intersect1d(ids[rows[0]], ids[rows[1]])]
    assert len(common) == round(0.8 * len(train))
    row_of = {str(i): r for r, i in enumerate(ids)}
    order = agreed_order(order_key(0), common)  # the run's seed: a replayable simulation
    (tmp_path / "ref").write_bytes(b"\n".join(train[row_of[common[k]]] for k in order) + b"\n")
    (tmp_path / "ref.t").write_bytes(b"\n".join(lines["a9a.t"]))
    raw = read_toml(REPO / "configs" / "a9a.toml")
    raw["data"] = {"dataset": "libsvm", "path": "ref", "test_path": "ref.t", "n_features": 123, "zero_based": False}
    single = run_experiment(config_from_dict(raw), with_baselines=False)
    parties = run_experiment(load_config(written), with_baselines=False)
    assert np.array_equal(np.asarray(parties.coef), np.asarray(single.coef))
    assert parties.metrics["objective"].to_numpy().tobytes() == single.metrics["objective"].to_numpy().tobytes()


def _vertical_shipped():
    out = {}
    for path in ALL:
        config = load_config(path)
        # gisette's 5000 dense columns (its stand-in's too) make party files of 30M cells
        if (
            config.setting is Setting.VERTICAL
            and "gisette" not in config.data.dataset
            and "gisette" not in str(config.data.options.get("preset", ""))
        ):
            # one config per dataset, solver and privacy: the others differ in hyper-parameters
            # or relation only, which party files do not touch (each split aligns ~30k IDs)
            key = (config.data.dataset, config.solver.name, config.privacy.claims_guarantee)
            out.setdefault(key, (path, config.solver.epochs))
    return list(out.values())


@pytest.mark.slow
@pytest.mark.data
@pytest.mark.parametrize("config,epochs", _vertical_shipped(), ids=lambda p: getattr(p, "stem", ""))
def test_every_shipped_vertical_config_runs_from_party_files(
    config, epochs, tmp_path, monkeypatch, data_dir, one_psi_per_id_list
):
    """`vfl datasets split --config` then `vfl run`: each kind of shipped vertical config from
    party files (at most two iterations; the own-data configs read the breast-cancer files of
    the manual's example)."""

    monkeypatch.chdir(tmp_path)
    write_breast_cancer(tmp_path)
    split = invoke(
        "datasets", "split", "--config", config, "--set", f"solver.epochs={min(2, epochs)}", "--out", "parts"
    )
    assert split.returncode == 0, split.stderr
    run = invoke("run", "--config", "parts/config.toml", "--out", "run", "--baselines", "none")
    assert run.returncode == 0, run.stderr
    assert "alignment:" in run.stdout
