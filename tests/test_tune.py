"""`vfl tune`: hyper-parameters chosen on public rows, or privately with the cost in epsilon.

The accounting of private random search is Papernot and Steinke 2022's Theorem 2,
checked against a numerical minimum; the random number of trials has the mean asked
for; a run of the chosen config charges the tuning before its own releases. On a CSV
with categorical columns (Adult, two party files) `vfl tune` then `vfl run` gives a
private stacking model that beats party 1 alone at epsilon 8.
"""

from __future__ import annotations

import bz2
import io
import json
import math
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import assert_one_line_error, invoke

from vfl.core.ledger import PrivacyLedger
from vfl.core.releases import Release
from vfl.datasets.schemas import ADULT_SCHEMA
from vfl.privacy.random_search import draw_trials, expected_trials, gamma_for_mean, tuning_rdp


def test_theorem_2_closed_form_is_the_minimum_over_lambda_hat():
    orders = np.array([1.5, 2.0, 8.0, 32.0])
    for mu, eta, gamma in ((0.5, 0.0, 0.1), (2.0, 1.0, 0.05), (0.05, 0.0, 0.3)):
        hats = np.concatenate([[1.0], np.geomspace(1.0, 1e6, 200001)])
        inner = np.min((1 + eta) * ((1 - 1 / hats) * hats * mu**2 / 2 + np.log(1 / gamma) / hats))
        expected = orders * mu**2 / 2 + inner + math.log(expected_trials(eta, gamma)) / (orders - 1)
        np.testing.assert_allclose(tuning_rdp(orders, mu, eta, gamma), expected, rtol=1e-6)


def test_the_number_of_trials_is_random_with_the_mean_asked_for():
    rng = np.random.default_rng(0)
    for eta, mean in ((0.0, 10.0), (1.0, 5.0)):
        gamma = gamma_for_mean(mean, eta)
        assert expected_trials(eta, gamma) == pytest.approx(mean, rel=1e-9)
        draws = np.array([draw_trials(eta, gamma, rng) for _ in range(20000)])
        assert draws.min() >= 1 and draws.std() > 1
        assert draws.mean() == pytest.approx(mean, rel=0.05)


def test_the_ledger_charges_the_tuning_before_any_release():
    ledger = PrivacyLedger(1e-5)
    assert ledger.epsilon() == 0.0
    curve = tuning_rdp(ledger.orders, 0.5, 0.0, gamma_for_mean(10.0))
    ledger.add_rdp(curve)
    alone = ledger.epsilon()
    assert alone > 0 and "tuning" in ledger.method

    plain = PrivacyLedger(1e-5, "rdp")
    release = Release(
        mechanism="gaussian", units=np.array([0]), sensitivity=np.array([1.0]), scale=np.array([2.0]), size=1
    )
    plain.add([release])
    ledger.add([release])
    assert ledger.epsilon() > max(alone, plain.epsilon())


def _small(d: Path, n=400, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.arange(n)
    a, b = rng.normal(size=n), rng.normal(size=n)
    job = rng.choice(["x", "y", "z"], n)
    y = (a + 2 * b + (job == "x") + rng.normal(scale=0.5, size=n) > 0).astype(int)
    for part, rows in (("", ids[:300]), ("-test", ids[300:])):
        pd.DataFrame({"id": rows, "a": a[rows], "job": job[rows], "y": y[rows]}).to_csv(
            d / f"p1{part}.csv", index=False
        )
        pd.DataFrame({"id": rows, "b": b[rows]}).to_csv(d / f"p2{part}.csv", index=False)
    (d / "c.toml").write_text("""name = "small"
[data]
dataset = "parties"
[[data.party]]
path = "p1.csv"
test_path = "p1-test.csv"
id = "id"
label = "y"
labels = [0, 1]
categorical_columns = ["job"]
[[data.party]]
path = "p2.csv"
test_path = "p2-test.csv"
id = "id"
[preprocessing]
scaling = "clip"
bounds = [-4.0, 4.0]
normalize_rows = true
[preprocessing.categories]
job = ["x", "y", "z"]
[partition]
public = 40
[solver]
name = "private_stacking"
epochs = 1
[privacy]
epsilon = 8.0
delta = 1e-5
replayable_noise = true
""")
    return d / "c.toml"


def test_public_tuning_writes_the_chosen_config_and_spends_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = _small(tmp_path)
    result = invoke("tune", "--config", config, "--grid", "solver.lam1=0.01,1.0", "--seeds", "1", "--out", "tuned.toml")
    assert result.returncode == 0, result.stderr
    tuned = tomllib.loads((tmp_path / "tuned.toml").read_text())
    assert tuned["tuning"]["method"] == "public"
    assert tuned["solver"]["lam1"] == tuned["tuning"]["chosen"]["solver.lam1"]
    assert tuned["tuning"]["validation_rows"] + tuned["tuning"]["fit_rows"] == 40
    run = invoke("run", "--config", "tuned.toml", "--out", "run")
    assert run.returncode == 0, run.stderr
    assert "privacy guarantee: (8, 1e-05)-DP" in run.stdout
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert man["privacy"]["hyperparameter_tuning"]["method"] == "public"


def test_private_tuning_is_in_the_runs_epsilon(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = _small(tmp_path)
    result = invoke(
        "tune",
        "--config",
        config,
        "--grid",
        "solver.lam1=0.01,1.0",
        "--private",
        "--trials",
        "3",
        "--out",
        "tuned.toml",
    )
    assert result.returncode == 0, result.stderr
    tuned = tomllib.loads((tmp_path / "tuned.toml").read_text())["tuning"]
    assert tuned["method"] == "private" and tuned["trials"] >= 1
    run = invoke("run", "--config", "tuned.toml", "--out", "run")
    assert run.returncode == 0, run.stderr
    metrics = pd.read_csv(tmp_path / "run" / "metrics.csv")
    # charged before the run's own release, and above the target the release alone meets
    assert metrics["epsilon_tight"].iloc[0] > 0
    assert metrics["epsilon_tight"].iloc[-1] > 8.0
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert "tuning" in man["privacy"]["spent"]["tight_accountant"]
    # refusals, before any work
    assert_one_line_error(
        invoke("tune", "--config", config, "--grid", "privacy.epsilon=1,2", "--private", "--out", "t2.toml"),
        "--grid privacy.epsilon: a private search calibrates every candidate",
    )
    assert_one_line_error(
        invoke(
            "tune", "--config", config, "--grid", "solver.lam1=1", "--set", "partition.public=0", "--out", "t3.toml"
        ),
        "set partition.public",
    )
    assert_one_line_error(
        invoke("tune", "--config", config, "--grid", "solver.lam1=1", "--out", "tuned.toml"), "tuned.toml exists"
    )
    assert not (tmp_path / "t2.toml").exists() and not (tmp_path / "t3.toml").exists()


ADULT = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)
#: party 1 (the label holder) holds the weaker columns, party 2 the rest
WEAK = ["age", "workclass", "race", "sex", "native-country", "hours-per-week"]


def _adult_csv(data_dir: Path, name: str, out: Path, skip: int) -> None:
    text = bz2.decompress((data_dir / f"{name}.bz2").read_bytes()).decode()
    frame = pd.read_csv(
        io.StringIO(text), header=None, names=ADULT, skiprows=skip, skipinitialspace=True, dtype=str, na_filter=False
    )
    frame = frame[frame["income"].str.len() > 0]
    frame["income"] = frame["income"].str.rstrip(".")
    rest = [c for c in ADULT if c not in WEAK and c not in ("fnlwgt", "income")]
    frame[WEAK + rest + ["income"]].to_csv(out, index=False)


@pytest.mark.slow
@pytest.mark.data
def test_tune_then_run_beats_party_1_alone_at_epsilon_8(tmp_path, monkeypatch, data_dir, one_psi_per_id_list):
    """A CSV with categorical columns (Adult), split into two party files; public parameters
    from Table Schemas (Adult's published values and ranges); `vfl tune --public` on 4000
    rows of the test file declared public; `vfl run` of the chosen config at epsilon 8."""

    monkeypatch.chdir(tmp_path)
    _adult_csv(data_dir, "adult.data", tmp_path / "adult.csv", 0)
    _adult_csv(data_dir, "adult.test", tmp_path / "adult_test.csv", 1)
    split = invoke(
        "datasets",
        "split",
        "adult.csv",
        "--label",
        "income",
        "--test",
        "adult_test.csv",
        "--parties",
        "2",
        "--overlap",
        "0.9",
        "--out",
        "parts",
    )
    assert split.returncode == 0, split.stderr
    written = tomllib.loads((tmp_path / "parts" / "config.toml").read_text())
    parties = written["data"]["party"]
    for m, party in enumerate(parties):
        columns = list(pd.read_csv(party["path"], nrows=1).columns)
        fields = []
        for c in columns:
            spec = ADULT_SCHEMA.column(c)
            if spec is None:
                continue
            if spec.kind == "numeric":
                fields.append(
                    {"name": c, "type": "number", "constraints": {"minimum": spec.bounds[0], "maximum": spec.bounds[1]}}
                )
            else:
                fields.append({"name": c, "type": "string", "constraints": {"enum": list(spec.values)}})
        (tmp_path / f"party{m + 1}.schema.json").write_text(json.dumps({"fields": fields}))
        party["schema"] = f"party{m + 1}.schema.json"
        party.pop("categorical_columns", None)
    parties[0]["labels"] = ["<=50K", ">50K"]
    lines = ['name = "adult-parties"', "[data]", 'dataset = "parties"']
    for party in parties:
        lines.append("[[data.party]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in party.items()]
    lines += [
        "[preprocessing]",
        'scaling = "minmax"',
        "normalize_rows = true",
        "[partition]",
        "public = 4000",
        "[objective]",
        "lam = 1.0",
        "[solver]",
        'name = "private_stacking"',
        "epochs = 1",
        "[privacy]",
        "epsilon = 8.0",
        "delta = 1e-5",
    ]
    (tmp_path / "c.toml").write_text("\n".join(lines) + "\n")
    tuned = invoke(
        "tune",
        "--config",
        "c.toml",
        "--grid",
        "solver.lam1=0.01,0.1",
        "--grid",
        "solver.prior_sd=0.1,0.5",
        "--seeds",
        "1",
        "--out",
        "tuned.toml",
    )
    assert tuned.returncode == 0, tuned.stderr
    run = invoke("run", "--config", "tuned.toml", "--out", "run")
    assert run.returncode == 0, run.stderr
    assert "privacy guarantee: (8, 1e-05)-DP" in run.stdout  # the tuning used public rows only
    metrics = pd.read_csv(tmp_path / "run" / "metrics.csv")
    baselines = json.loads((tmp_path / "run" / "baselines.json").read_text())
    local = next(v for v in baselines.values() if isinstance(v, dict) and v.get("role") == "local")
    assert metrics["test_logloss"].iloc[-1] < local["test_logloss"]
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert man["released"]["columns"]["test_logloss"] == "released"
    assert man["privacy"]["hyperparameter_tuning"]["method"] == "public"
