"""Typed records at the seams: the manifest's model, its committed schema, and the
privacy records (core/typed_records.py, experiments/manifest.py, admm/sharing/plan.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import SMALL, assert_one_line_error, invoke
from pydantic import ValidationError

from vfl.core.typed_records import PrivacyInfo
from vfl.experiments.manifest import SCHEMA_PATH, Manifest, schema_text
from vfl.experiments.records import dump_json, load_run

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_schema_is_the_models():
    """docs/schemas/manifest.schema.json is what `python -m vfl.experiments.manifest` writes."""
    committed = (ROOT / SCHEMA_PATH).read_text()
    assert committed == schema_text(), (
        "the manifest's model changed: regenerate the schema with "
        "`python -m vfl.experiments.manifest` from the repository's root"
    )


def _roundtrip(path: Path) -> str:
    """manifest.json read into the model and written again, as write_run writes it."""
    out = path.with_name(".roundtrip.json")
    dump_json(Manifest.model_validate(json.loads(path.read_text())).dump(), out)
    try:
        return out.read_text()
    finally:
        out.unlink()


def test_every_committed_manifest_validates():
    """Each results/**/manifest.json in the repository is a Manifest, and writes back to
    the byte (none is committed today: the test holds for the first one)."""
    for path in sorted((ROOT / "results").rglob("manifest.json")):
        assert _roundtrip(path) == path.read_text(), path


def test_a_run_manifest_is_the_model_written_back_to_the_byte(tmp_path):
    """A private run's manifest (privacy, spent, released kinds) read and written again
    is the same file; the record read back answers by attribute."""
    config = tmp_path / "c.toml"
    config.write_text(
        SMALL.format(epochs=2) + "[preprocessing]\nnormalize_rows = true\n"
        '[privacy]\ndelta = 1e-5\nsigma = 4.0\nclip = 1.0\naccountant = "rdp"\n'
        "replayable_noise = true\n"
    )
    result = invoke(
        "run", "--config", config, "--out", tmp_path / "r", "-q", "--no-figure", "--set", 'run.baselines="none"'
    )
    assert result.returncode == 0, result.stderr
    path = tmp_path / "r" / "manifest.json"
    assert _roundtrip(path) == path.read_text()
    man = load_run(tmp_path / "r").manifest
    assert man.privacy.dp_guarantee is True and man.privacy.neighbouring
    assert man.spent.epochs == 2 and man.spent.epsilon_tight > 0
    assert man.spent.tight_accountant == "rdp"
    assert man.released.private and man.released.diagnostic("objective")
    assert not man.released.diagnostic("epsilon_tight")
    assert man.solver.value("rho") == 1.0 and man.iteration_name == "epoch"


def test_a_record_keeps_its_key_order_and_refuses_unknown_keys():
    given = {"note": "n", "dp_guarantee": False, "mode": "simulation"}
    info = PrivacyInfo.model_validate(given)
    assert list(info.dump()) == ["note", "dp_guarantee", "mode"]  # not the fields' order
    assert list(info.replace(labels="l").dump()) == ["note", "dp_guarantee", "mode", "labels"]
    with pytest.raises(ValidationError, match="extra_forbidden|Extra inputs"):
        PrivacyInfo.model_validate({**given, "dp_guarantees": True})
    with pytest.raises(ValidationError):
        info.note = "changed"  # frozen


def test_a_manifest_that_does_not_fit_is_one_error_line(tmp_path):
    """`vfl plot` on a run whose manifest lost a field names it."""
    config = tmp_path / "c.toml"
    config.write_text(SMALL.format(epochs=1))
    assert (
        invoke(
            "run", "--config", config, "--out", tmp_path / "r", "-q", "--no-figure", "--set", 'run.baselines="none"'
        ).returncode
        == 0
    )
    path = tmp_path / "r" / "manifest.json"
    man = json.loads(path.read_text())
    del man["result"]["epochs_run"]
    path.write_text(json.dumps(man))
    result = invoke("plot", tmp_path / "r", "--out", tmp_path / "f.png")
    assert_one_line_error(
        result,
        "manifest.json: damaged run file, or one from another vfl "
        "version (result.epochs_run: field required; 1 problem(s))",
    )
