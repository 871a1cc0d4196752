"""The privacy findings on real a9a (slow suite): the audit refutes the paper's
accounting and passes every mechanism that claims a guarantee."""

import pytest
from shipped import paper_configs

from vfl.experiments.audit import audit_config
from vfl.experiments.config import load_config

CONFIGS = paper_configs("hu")

pytestmark = [pytest.mark.slow, pytest.mark.data]


def test_the_papers_lemma_1_accounting_is_refuted_on_a9a(data_dir):
    """papers/hu/configs/privacy-a9a.toml: sigma from Lemma 1 for (8, 1e-5) over 20 epochs.

    This documents a finding about the paper, not a bug: zeroing one column of
    a party's block moves its releases far more than Lemma 1 allows.
    """
    config = load_config(CONFIGS / "privacy-a9a.toml")
    # one pair (the worst candidate) and 10 runs refute it: 18 s of CPU against 42 with 2 x 20
    report = audit_config(config, data_dir=data_dir, K=10, seed=0, kinds=("adversarial",), max_pairs=1)
    assert report.claims["lemma1"][0] == pytest.approx(8.0, rel=1e-3)
    assert report.verdict("lemma1") == "REFUTED"
    assert report.verdict("guarantee") == "PASS"  # the sound epsilon of the same noise


@pytest.mark.parametrize("name", ["privacy-a9a-column", "privacy-a9a-row"])
def test_sound_accounting_passes_its_audit_on_a9a(data_dir, name):
    # 5 epochs keep it short: sigma is calibrated for them, the claim is still (8, 1e-5)
    config = load_config(CONFIGS / f"{name}.toml", ["solver.epochs=5"])
    report = audit_config(config, data_dir=data_dir, K=10, seed=0, kinds=("adversarial",), max_pairs=1)
    assert report.claims["guarantee"][0] == pytest.approx(8.0, rel=1e-3)
    assert report.verdict("guarantee") == "PASS"
