"""`vfl attack`: the statistics against closed forms, the JSON keys, the bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import vfl

from vfl.attacks import auc, ceiling_auc, delong_ci, epsilon_lower
from vfl.papers import paper
from vfl.papers.attacks.figures import reproduce

TINY = """
name = "tiny"
[data]
dataset = "synthetic"
options = {{ n_train = 300, n_test = 50, n_features = 8, seed = 3 }}
[partition]
columns = [4, 4]
[objective]
lam = 0.01
[solver]
name = "{solver}"
epochs = {epochs}
{extra}
"""


def test_auc_is_the_pair_count_and_delong_covers_it():
    rng = np.random.default_rng(0)
    t = rng.random(400) < 0.3
    s = rng.normal(size=400) + t + np.round(rng.random(400), 1)  # ties too
    pos, neg = s[t], s[~t]
    brute = np.mean((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :]))
    assert auc(s, t) == pytest.approx(brute, abs=1e-12)
    lo, hi = delong_ci(s, t)
    assert lo < brute < hi and hi - lo < 0.2


def test_ceiling_is_the_envelope_area():
    assert ceiling_auc(1.0) == pytest.approx(math.e / (1 + math.e), abs=1e-12)  # 0.731
    assert ceiling_auc(1.0, 1e-5) == pytest.approx(ceiling_auc(1.0), abs=1e-4)
    assert ceiling_auc(0.0) == 0.5 and ceiling_auc(math.inf) == 1.0


def test_randomized_response_scores_show_at_most_their_epsilon():
    """Scores that are RR outputs at epsilon 1: the AUC is the ceiling, and the epsilon the
    attack shows stays under 1 (at 95 %)."""
    rng = np.random.default_rng(1)
    t = rng.random(20000) < 0.5
    keep = rng.random(t.size) < math.e / (1 + math.e)
    s = np.where(keep, t, ~t).astype(float)
    assert auc(s, t) == pytest.approx(ceiling_auc(1.0), abs=0.02)
    assert 0.5 < epsilon_lower(s, t, np.random.default_rng(2)) <= 1.0


def _config(tmp_path, solver, epochs=2, extra="", privacy=""):
    path = tmp_path / f"{solver}.toml"
    path.write_text(
        TINY.format(solver=solver, epochs=epochs, extra=extra) + (f"[privacy]\n{privacy}\n" if privacy else "")
    )
    return path


def test_attack_json_has_exactly_the_issues_keys(tmp_path):
    out = vfl(
        "attack",
        "--config",
        _config(tmp_path, "fdml_sgd", extra="batch_size = 50"),
        "--attack",
        "label-direction",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert list(got) == ["attack", "auc", "auc_ci", "ceiling", "epsilon_lower"]
    assert got["attack"] == "label-direction" and len(got["auc_ci"]) == 2
    assert got["ceiling"] is None  # no label guarantee: FDML sends the derivatives as they are
    assert got["auc"] > 0.95  # the derivatives' signs are the labels (Li et al. 2021)


@pytest.mark.parametrize(
    "args, solver, extra, privacy, message",
    [
        (
            ["--attack", "label-norm"],
            "private_stacking",
            "",
            "",
            "error: attack label-norm is not defined for private_stacking (defined: label-direction, "
            "model-completion, feature-reconstruction)",
        ),
        (
            ["--attack", "model-completion", "--known", "3"],
            "admm_sharing",
            "",
            "",
            "error: model-completion needs at least 10 known labels; --known is 3",
        ),
        (
            ["--attack", "feature-reconstruction"],
            "private_stacking",
            "",
            "epsilon = 1.0\ndelta = 1e-5\nsplit = [1.0, 0.0, 0.0]\nreplayable_noise = true",
            "error: the run has no message that feature-reconstruction reads: party 2 sent party 1 "
            "no shares of the training rows",
        ),
    ],
)
def test_attack_bad_input_is_one_line(tmp_path, args, solver, extra, privacy, message):
    epochs = 1 if solver == "private_stacking" else 2
    pre = "[preprocessing]\nnormalize_rows = true\n" if privacy else ""
    path = _config(tmp_path, solver, epochs, extra + "\n" + pre, privacy)
    out = vfl("attack", "--config", path, *args)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [message]


@pytest.mark.slow
@pytest.mark.data
def test_reproduce_attacks_meets_the_stacking_target(tmp_path):
    """`vfl reproduce attacks` for private stacking at epsilon 1 on a9a: the label attacks
    stay under the ceiling within their CI, and with label and feature epsilon 1 the model
    still beats party 1 alone; undefended, the labels are read off (AUC 1)."""

    reproduce(
        "attacks",
        tmp_path,
        paper("attacks").config_dir,
        epsilons=(1.0,),
        methods=("private_stacking",),
        directions=("labels",),
        echo=lambda *a, **k: None,
    )
    t = pd.read_csv(tmp_path / "attacks.csv")
    labels = t[t["direction"] == "labels"]
    at1, free = labels[labels["epsilon"] == 1.0], labels[~np.isfinite(labels["epsilon"])]
    assert len(at1) == 2 and (at1["auc_lo"] <= at1["ceiling"]).all()
    assert (at1["test_logloss"] < at1["party1_logloss"]).all()
    assert (free["auc"] > 0.99).all()
    assert (tmp_path / "attacks-private_stacking.png").is_file()


# ------------------------------------------------------------- a run's directory --
def _recorded(tmp_path, solver="admm_sharing", privacy="", record=True, name="run"):
    epochs = 1 if solver == "private_stacking" else 2
    pre = "[preprocessing]\nnormalize_rows = true\n" if privacy else ""
    path = _config(tmp_path, solver, epochs, pre, privacy)
    out = tmp_path / name
    proc = vfl(
        "run", "--config", path, "--out", out, "--quiet", "--no-figure", *(["--record-received"] if record else [])
    )
    assert proc.returncode == 0, proc.stderr
    return path, out


def test_attack_on_a_run_directory_reads_what_the_passive_party_received(tmp_path):
    """`vfl attack RUN_DIR` on a run written with --record-received: what party 2 received
    (ADMM sharing's pulls) is what `--config` taps, so the same JSON, to the bit."""
    path, out = _recorded(tmp_path)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["released"]["files"]["received.npz"] == "released"
    assert manifest["received"]["arrays"] == {"labels_party2": [300, 2], "shares_party2": [300, 2]}
    for name in ("label-direction", "feature-reconstruction"):
        got = vfl("attack", out, "--attack", name, "--json")
        assert got.returncode == 0, got.stderr
        tapped = vfl("attack", "--config", path, "--attack", name, "--json")
        assert json.loads(got.stdout) == json.loads(tapped.stdout)
        assert list(json.loads(got.stdout)) == ["attack", "auc", "auc_ci", "ceiling", "epsilon_lower"]


@pytest.mark.parametrize(
    "case, args, message",
    [
        ("missing", ["--attack", "label-norm"], "error: {out}: no such run directory"),
        (
            "not a run",
            ["--attack", "label-norm"],
            "error: {out} is not a run directory (no manifest.json and config.json)",
        ),
        (
            "unfinished",
            ["--attack", "label-norm"],
            "error: {out} is a run that did not finish (checkpoint.json only): vfl run --resume {out} first",
        ),
        (
            "unrecorded",
            ["--attack", "label-norm"],
            "error: {out} has no received.npz: the run did not record what its parties received "
            "(vfl run --record-received)",
        ),
        (
            "stacking",
            ["--attack", "label-norm"],
            "error: attack label-norm is not defined for private_stacking (defined: "
            "label-direction, model-completion, feature-reconstruction)",
        ),
        (
            "stacking",
            ["--attack", "feature-reconstruction"],
            "error: the run has no message that feature-reconstruction reads: party 2 sent party 1 "
            "no shares of the training rows",
        ),
        (
            "both",
            ["--attack", "label-norm", "--config", "x.toml"],
            "error: give a finished run's directory (vfl attack RUN_DIR) or --config (run here), not both",
        ),
    ],
)
def test_attack_on_a_run_directory_bad_input_is_one_line(tmp_path, case, args, message):
    out = tmp_path / "run"
    if case == "not a run":
        out.mkdir()
        (out / "notes.txt").write_text("x")
    elif case == "unfinished":
        out.mkdir()
        (out / "checkpoint.json").write_text("{}")
    elif case in ("unrecorded", "both"):
        _recorded(tmp_path, record=False)
    elif case == "stacking":
        _recorded(
            tmp_path,
            "private_stacking",
            "epsilon = 1.0\ndelta = 1e-5\nsplit = [1.0, 0.0, 0.0]\nreplayable_noise = true",
        )
    got = vfl("attack", out, *args)
    assert got.returncode == 2
    assert got.stderr.strip().splitlines() == [message.format(out=out)]


def test_record_received_needs_a_vertical_run(tmp_path):
    repo = Path(__file__).resolve().parents[1]
    got = vfl(
        "run",
        "--config",
        repo / "papers/ldp/configs/ldp-dvp-admm-n10.toml",
        "--record-received",
        "--out",
        tmp_path / "run",
    )
    assert got.returncode == 2
    assert got.stderr.strip().splitlines() == [
        "error: --record-received: dvp_admm is not a vertical solver (its units hold rows; no "
        "party receives the labels)"
    ]
    assert not (tmp_path / "run").exists()
