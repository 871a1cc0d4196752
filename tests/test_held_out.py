"""Test and public rows are not private records in disguise.

A private run scores its test rows, and pre-trains or tunes on its public
rows, without noise. What it computes on them is released only when they are
rows the relation does not protect (the published test file, a test file the
user names, or, with ``partition.held_out = "test_part"``, a row setting's
public and test rows drawn from such a file); test rows held out of the
private file or drawn from the pool make the test metrics diagnostic (with the
reason), and public rows taken from protected records are refused in one line.
The reproducer of the issue: flipping records of the private file must not move
a single test or public row.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_one_line_error, invoke
from shipped import write_breast_cancer

from vfl.core.column_kinds import DIAGNOSTIC, RELEASED
from vfl.core.errors import ConfigError
from vfl.experiments.config import config_from_dict
from vfl.experiments.repeat_setup import _prepare
from vfl.experiments.run_plan import plan_run
from vfl.experiments.runner import run_experiment

OWN = Path(__file__).resolve().parents[1] / "configs" / "own-data"


@pytest.fixture
def own(tmp_path, monkeypatch):
    """A directory with README's breast-cancer files, the working directory."""
    write_breast_cancer(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def dump_toml(table: dict, prefix: str = "") -> str:
    """``table`` as TOML (quoted keys, nested tables as their own sections)."""

    def key(k):
        return k if k.replace("_", "").isalnum() else json.dumps(k)

    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        return json.dumps(v) if isinstance(v, (str, list)) else repr(v)

    lines = [f"{key(k)} = {value(v)}" for k, v in table.items() if not isinstance(v, dict)]
    for k, v in table.items():
        if isinstance(v, dict):
            name = f"{prefix}{key(k)}"
            lines += ["", f"[{name}]", dump_toml(v, name + ".")]
    return "\n".join(lines) + "\n"


def _own(name: str, **changes) -> dict:
    """The shipped own-data config ``name`` with ``section__key`` changes (None: removed)."""
    raw = tomllib.loads((OWN / f"{name}.toml").read_text())
    for key, value in changes.items():
        section, _, k = key.partition("__")
        if value is None:
            raw[section].pop(k, None)
        else:
            raw.setdefault(section, {})[k] = value
    return raw


def _single_file(name: str, **changes) -> dict:
    """The config on the training file alone, a quarter of it held out as the test set."""
    return _own(name, data__test_path=None, data__test_fraction=0.25, data__stratify=False, **changes)


def test_a_test_split_of_the_private_file_is_diagnostic_and_says_why(own):
    shipped = run_experiment(config_from_dict(_own("stacking")), with_baselines=False)
    assert shipped.manifest.dump()["released"]["columns"]["test_logloss"] == RELEASED
    assert shipped.manifest.dump()["distribution"]["test_rows_protected"] is False
    assert shipped.manifest.dump()["released"]["test_metrics_note"] == ""

    config = config_from_dict(_single_file("stacking"))
    result = run_experiment(config, with_baselines=False)
    released = result.manifest.dump()["released"]
    assert released["columns"]["test_logloss"] == released["columns"]["test_accuracy"] == DIAGNOSTIC
    assert released["result"]["final_test_logloss"] == DIAGNOSTIC
    assert result.manifest.dump()["distribution"]["test_rows_protected"] is True
    assert (
        "held out of the training file itself (data.test_fraction = 0.25)" in released["test_metrics_note"]
        and "data.test_path" in released["test_metrics_note"]
    )
    # what is released is unchanged (the model): the weights stay released
    assert released["columns"]["weight_party2"] == RELEASED
    only = run_experiment(config, with_baselines=False, release_only=True)
    assert not any(c.startswith("test_") for c in only.metrics.columns)
    assert "weight_party2" in only.metrics.columns
    assert "final_test_logloss" not in only.manifest.dump()["result"]


def test_the_summary_names_why_the_test_metrics_are_diagnostic(own):
    cfg = own / "single.toml"
    cfg.write_text(dump_toml(_single_file("stacking")))
    result = invoke("run", "--config", cfg, "--out", own / "run")
    assert result.returncode == 0, result.stderr
    assert (
        "* diagnostic: computed from exact private values, not covered by the guarantee; "
        "the test metrics are scored on rows held out of the training file itself "
        "(data.test_fraction = 0.25)"
    ) in result.stdout
    header, last = result.stdout.splitlines()[:2]
    assert last.split()[-1].endswith("*") and last.split()[-2].endswith("*")  # test ll, acc


@pytest.mark.parametrize(
    "raw, fragments",
    [
        (
            _own("dp-admm", partition__held_out=None),
            [
                "partition.public = 40: a private run's public rows must be rows the guarantee does not "
                "protect, but these would be drawn from the pool the units' rows come from: set "
                'partition.held_out = "test_part"'
            ],
        ),
        (
            _single_file("dp-admm"),
            [
                "partition.public = 40",
                "would be held out of the training file (data.test_fraction): "
                "name a separate test file (data.test_path)",
            ],
        ),
        (
            _single_file("stacking", partition__public=20),
            ["partition.public = 20", "held out of the training file (data.test_fraction)"],
        ),
    ],
    ids=["pool", "test-fraction", "vertical"],
)
def test_public_rows_from_protected_records_are_refused(own, raw, fragments):
    cfg = own / "c.toml"
    cfg.write_text(dump_toml(raw))
    result = invoke("run", "--config", cfg, "--out", own / "out")
    assert_one_line_error(result, *fragments)
    assert not (own / "out").exists()


def test_a_run_without_a_guarantee_may_draw_them_from_the_pool(own):
    raw = _own(
        "dp-admm",
        partition__held_out=None,
        privacy__noise=False,
        privacy__epsilon=None,
        privacy__delta=None,
        privacy__epsilon_per_iteration=0.5,
    )
    plan = plan_run(config_from_dict(raw))  # as the paper drew its pre-training rows
    assert len(plan.first.data.public[1]) == 40 and plan.first.distribution["held_out"] == "pool"


def _held_out(plan, repeats=3):
    out = []
    for r in range(repeats):
        p = _prepare(plan.setting, plan.config, r)
        out.append((p.test, p.y_test, *(p.data.public or ()), p.data.A))
    return out


def test_no_test_or_public_row_moves_when_the_private_records_do(own):
    """The issue's reproducer: with the providers' file changed in every record (labels flipped,
    features moved), every repeat's test and public rows are the same to the bit; drawn from
    the pool, they are not."""
    config = config_from_dict(_own("dp-admm"))
    before = _held_out(plan_run(config))
    text = (own / "breast_cancer.csv").read_text().splitlines()
    flipped = [text[0]] + [
        ",".join([*(f"{float(v) * 1.01:.6g}" for v in line.split(",")[:-1]), str(1 - int(float(line.split(",")[-1])))])
        for line in text[1:]
    ]
    (own / "breast_cancer.csv").write_text("\n".join(flipped) + "\n")
    after = _held_out(plan_run(config))
    for b, a in zip(before, after):
        for x, y in zip(b[:4], a[:4]):  # test rows, labels, public rows, labels
            np.testing.assert_array_equal(x, y)
        assert not np.array_equal(b[4], a[4])  # the providers' rows did change
    # every repeat draws a fresh split of the test file: 40 public, the other 103 scored
    assert len({b[1].tobytes() for b in before}) == 3
    assert [len(b[1]) for b in before] == [103] * 3 and [len(b[3]) for b in before] == [40] * 3
    # the power of the check: test rows drawn from the pool move with the records
    pool = _own("dp-admm", partition__held_out=None, partition__public=0, partition__test=50, solver__D_w=1.0)
    moved = _held_out(plan_run(config_from_dict(pool)), 1)
    (own / "breast_cancer.csv").write_text("\n".join(text) + "\n")
    kept = _held_out(plan_run(config_from_dict(pool)), 1)
    assert not np.array_equal(moved[0][1], kept[0][1])


def test_test_rows_drawn_from_the_pool_are_diagnostic(own):
    raw = _own("dp-admm", partition__held_out=None, partition__public=0, partition__test=50, solver__D_w=1.0)
    result = run_experiment(config_from_dict(raw), with_baselines=False)
    released = result.manifest.dump()["released"]
    assert released["columns"]["test_accuracy"] == DIAGNOSTIC
    assert released["columns"]["sigma"] == released["columns"]["eta"] == RELEASED
    assert "drawn by the seed from the pool (train)" in released["test_metrics_note"]
    assert 'partition.held_out = "test_part"' in released["test_metrics_note"]
    assert result.manifest.dump()["distribution"]["test_source"] == "held out from the pool (train)"
    shipped = run_experiment(config_from_dict(_own("dp-admm")), with_baselines=False)
    assert shipped.manifest.dump()["released"]["columns"]["test_accuracy"] == RELEASED
    assert shipped.manifest.dump()["distribution"]["test_source"] == "drawn from the dataset's test part"


@pytest.mark.parametrize(
    "partition, message",
    [
        (
            {"held_out": "test_part", "pool": "train+test"},
            "partition.held_out = 'test_part' draws the public and test rows from the test part, so "
            "the pool cannot hold it too: set partition.pool = 'train'",
        ),
        ({"held_out": "file"}, "partition.held_out = 'file' is not one of: pool, test_part"),
    ],
)
def test_held_out_is_validated_with_the_config(partition, message):
    raw = _own("dp-admm")
    raw["partition"].update(partition)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config_from_dict(raw)


def test_a_test_part_too_small_is_one_line(own):
    cfg = own / "c.toml"
    cfg.write_text(dump_toml(_own("dp-admm", partition__test=120)))
    assert_one_line_error(
        invoke("run", "--config", cfg, "--out", own / "out"),
        "partition.held_out = 'test_part': 40 public + 120 test rows = 160, but the test part has 143",
    )
    cfg.write_text(dump_toml(_own("dp-admm", partition__public=143)))
    assert_one_line_error(
        invoke("run", "--config", cfg, "--out", own / "out"),
        "143 public + at least 1 test row, but the test part has 143",
    )


def _network(**partition) -> dict:
    return {
        "name": "n",
        "data": {"dataset": "synthetic", "options": {"n_train": 150, "n_test": 40, "n_features": 5, "seed": 3}},
        "preprocessing": {"normalize_rows": True},
        "partition": {"samples_per_agent": 10, **partition},
        "network": {"graph": "gnm", "nodes": 5, "edges": 6},
        "objective": {"lam": 5.0, "reduction": "unit_mean", "regularizer": "half_l2sq"},
        "solver": {"name": "ldp_admm", "epochs": 2},
        "privacy": {"delta": 1e-5, "replayable_noise": True},
    }


def test_a_networks_test_rows_follow_the_same_rule():
    pooled = plan_run(config_from_dict(_network(pool="train+test", test=20))).first
    assert "rows of the pool (train+test) that no agent holds" in pooled.test_private
    held = plan_run(config_from_dict(_network(held_out="test_part", test=25)))
    assert held.first.test_private == "" and len(held.first.y_test) == 25
    # the test part's rows, through the same stage as the pool's
    test_part = held.setting.records()[1]
    assert test_part.shape == (40, 5)
    assert all(any(np.array_equal(row, t) for t in test_part) for row in held.first.test)
    result = run_experiment(config_from_dict(_network(held_out="test_part")), with_baselines=False)
    assert result.manifest.dump()["distribution"]["test"] == 40
    assert result.manifest.dump()["released"]["test_metrics_note"].startswith("scored with the average")
