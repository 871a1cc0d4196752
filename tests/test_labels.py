"""The label relation: every vertical protocol declares which payloads depend on the labels
(``Call.labels``), checked by flipping one label and watching which messages move."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import vfl

from vfl.core.messages import same
from vfl.core.relations import LABELS
from vfl.core.sampling import ExactSampler, randomized_response
from vfl.experiments.audit import audit_config
from vfl.experiments.config import config_from_dict
from vfl.experiments.transcript import record
from vfl.stacking import randomized_response as lab

TINY = """
name = "tiny"
[data]
dataset = "synthetic"
options = {{ n_train = 60, n_test = 20, n_features = 8, seed = 3 }}
[partition]
columns = [4, 4]
[objective]
lam = 0.01
[solver]
name = "{solver}"
epochs = {epochs}
{extra}
"""

SOLVERS = {"admm_sharing": (3, ""), "fdml_sgd": (2, "batch_size = 20"), "private_stacking": (1, "")}


def tiny(solver: str, extra: str = "", privacy: str = ""):
    epochs, more = SOLVERS[solver]
    text = TINY.format(solver=solver, epochs=epochs, extra="\n".join([more, extra]))
    return config_from_dict(tomllib.loads(text + (f"\n[privacy]\n{privacy}\n" if privacy else "")))


def _moved(a, b) -> dict:
    """Per call, which payloads differ between two transcripts of the same run."""
    out = {}
    assert [e.call for e in a.exchanges] == [e.call for e in b.exchanges]
    for x, y in zip(a.exchanges, b.exchanges):
        got = out.setdefault(x.call, set())
        if not same(x.request, y.request):
            got.add("request")
        if not same(x.reply, y.reply):
            got.add("reply")
    return out


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_declared_label_dependence_is_what_moves(solver):
    config = tiny(solver)
    base, other = record(config), record(config, flip=7)
    moved = _moved(base, other)
    declared = {c.name: set(c.labels) for c in base.protocol.calls}
    for call, payloads in moved.items():
        assert payloads == declared[call], (call, payloads, declared[call])
    # the labels reach the passive parties: some request depends on them
    assert any(c.labels_to_unit for c in base.protocol.calls)


def test_label_relation_is_typed():
    assert LABELS.name == "labels" and "flipped" in str(LABELS)
    assert LABELS.describe()["towards"].startswith("the passive parties")


# ------------------------------------------------------------------ label DP: stacking --
def test_debiased_loss_is_unbiased_and_its_gradient_bounded():
    """Natarajan et al.'s estimator: (1 - q) l~(t, y) + q l~(t, -y) = l(t, y) for the
    logistic loss, and |d l~ / dt| <= 1 + c."""

    q = lab.flip_rate(1.0)
    c = lab.debias(q)
    t = np.linspace(-6, 6, 25)

    def loss(t, y):
        return np.logaddexp(0, -y * t) - c * y * t

    for y in (-1.0, 1.0):
        np.testing.assert_allclose((1 - q) * loss(t, y) + q * loss(t, -y), np.logaddexp(0, -y * t), atol=1e-12)
    grad = -(1 / (1 + np.exp(t))) - c  # y = +1
    assert np.all(np.abs(grad) <= lab.gradient_bound(q))


def test_exact_randomized_response_flips_at_its_rate():
    y = np.ones(40000, dtype=np.int8)
    flips = np.mean(randomized_response(y, 1.0, ExactSampler()) < 0)
    q = 1 / (1 + np.e)
    assert abs(flips - q) < 4 * np.sqrt(q * (1 - q) / y.size)


def test_stacking_label_dp_is_accounted_and_printed(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        TINY.format(solver="private_stacking", epochs=1, extra="")
        + "\n[preprocessing]\nnormalize_rows = true\n"
        + "[privacy]\nepsilon = 1.0\ndelta = 1e-5\nlabel_epsilon = 0.5\n"
        + 'replayable_noise = true\n[run]\nbaselines = "none"\n'
    )
    out = vfl("run", "--config", cfg, "--out", tmp_path / "run")
    assert out.returncode == 0, out.stderr
    assert "(0.5, 0)-label-DP towards the passive parties" in out.stdout

    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    label = manifest["privacy"]["label_guarantee"]
    assert label["relation"] == "labels" and abs(label["spent"]["epsilon"] - 0.5) < 1e-9
    metrics = pd.read_csv(tmp_path / "run" / "metrics.csv")
    assert abs(metrics["epsilon_labels"].iloc[-1] - 0.5) < 1e-9
    assert abs(metrics["epsilon_tight"].iloc[-1] - 1.0) < 1e-6  # the features' ledger apart


def test_label_epsilon_without_a_mechanism_is_one_line(tmp_path):
    cfg = tmp_path / "c.toml"

    shipped = Path(__file__).parents[1] / "papers/dp_admm/configs/dp-admm-l2.toml"
    cfg.write_text(shipped.read_text().replace("[privacy]\n", "[privacy]\nlabel_epsilon = 1.0\n"))
    out = vfl("run", "--config", cfg, "--out", tmp_path / "run")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: c.toml: privacy.label_epsilon: dp_admm has no label-DP mechanism (label DP: "
        "private_stacking, admm_sharing, fdml_sgd)"
    ]
    assert not (tmp_path / "run").exists()


# --------------------------------------------------------- label DP: ADMM sharing, FDML --
@pytest.mark.parametrize(
    "solver, privacy",
    [
        ("admm_sharing", "label_epsilon = 1.0\nlabel_clip = 1.0"),
        ("fdml_sgd", "label_epsilon = 1.0"),
    ],
)
def test_gaussian_label_dp_composes_to_its_target(tmp_path, solver, privacy):
    """The pulls (derivatives) are calibrated over the run's releases: the labels' ledger
    composes them back to the target, and the features' guarantee is not claimed."""

    epochs, more = SOLVERS[solver]
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        TINY.format(solver=solver, epochs=epochs, extra=more)
        + f'[privacy]\n{privacy}\nreplayable_noise = true\n[run]\nbaselines = "none"\n'
    )
    out = vfl("run", "--config", cfg, "--out", tmp_path / "run")
    assert out.returncode == 0, out.stderr
    assert "(1, 1e-05)-label-DP towards the passive parties" in out.stdout
    metrics = pd.read_csv(tmp_path / "run" / "metrics.csv")
    assert metrics["epsilon_labels"].iloc[-1] == pytest.approx(1.0, abs=1e-4)
    assert "epsilon_tight" not in metrics


def test_admm_label_dp_needs_its_clip(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(TINY.format(solver="admm_sharing", epochs=2, extra="") + "[privacy]\nlabel_epsilon = 1.0\n")
    out = vfl("run", "--config", cfg, "--out", tmp_path / "run")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: c.toml: privacy.label_epsilon needs privacy.label_clip (L): label DP bounds the "
        "pulled values to [-L, L]"
    ]


# ------------------------------------------------------------ the audit of label DP --
@pytest.mark.slow
@pytest.mark.parametrize(
    "solver, privacy",
    [
        ("private_stacking", "label_epsilon = 1.0"),
        ("fdml_sgd", "label_epsilon = 1.0\nlabel_clip = 0.5"),
        # (the audit's shared memo of ADMM sharing's z-update once ignored the labels b: the label
        # pairs' runs were then identical and the audit passed vacuously)
        ("admm_sharing", "label_epsilon = 1.0\nlabel_clip = 0.05"),
    ],
)
def test_the_label_guarantee_passes_as_run_and_is_refuted_at_a_third_of_the_noise(solver, privacy):
    """The audit's power rule on the label relation (one label flipped): the labels' ledger
    claims (1, delta); PASS with the mechanism as run, REFUTED with a third of its noise."""

    config = tiny(solver, privacy=privacy + "\nreplayable_noise = true")
    verdicts = {}
    for scale in (1.0, 0.33):
        report = audit_config(config, K=40, max_pairs=1, noise_scale=scale)
        assert report.claims["labels"][0] == pytest.approx(1.0, abs=1e-6)
        assert report.pairs[0].name.startswith("label ")
        verdicts[scale] = report.verdict("labels")
    assert verdicts == {1.0: "PASS", 0.33: "REFUTED"}
