from pathlib import Path

import numpy as np
import pytest
from shipped import ALL, shipped

from vfl.core.errors import ConfigError
from vfl.core.preprocessing import RawTable
from vfl.datasets.dataset import RawDataset
from vfl.experiments.config import apply_overrides, config_from_dict, load_config, parse_override
from vfl.experiments.distribution import fit_config_stage
from vfl.experiments.registry import get_solver

CONFIGS = Path(__file__).resolve().parents[1] / "configs"

BASE = {"data": {"dataset": "a9a"}, "partition": {"columns": [66, 57]}}


def test_shipped_configs_validate():
    names = sorted(p.name for p in ALL)
    assert "a9a.toml" in names and "dp-admm-l2.toml" in names
    for path in ALL:
        load_config(path)


def test_a9a_config_has_the_authors_settings():
    c = load_config(CONFIGS / "a9a.toml")
    assert (c.objective.loss, c.objective.reduction, c.objective.lam) == ("logistic", "sum", 0.001)
    assert (c.solver.rho, c.solver.epochs) == (1.0, 100)
    assert c.partition.columns == [66, 57]
    # the intercept is the preprocessing stage's, on by default in the vertical setting
    assert c.preprocessing.values.get("intercept") is None
    stage = fit_config_stage(c, _numeric_raw(123), get_solver(c.solver.name))
    assert stage.rows.intercept and not stage.rows.normalize and stage.rows.row_clip is None


def _numeric_raw(d: int, n: int = 4):
    """A tiny all-numeric RawDataset of width ``d``."""
    X = np.arange(n * d, dtype=float).reshape(n, d)
    y = np.array([1.0, -1.0] * (n // 2))
    t = RawTable.from_matrix(X)
    return RawDataset(name="tiny", train=t, y_train=y, test=t, y_test=y)


def test_defaults_are_filled_in():
    c = config_from_dict(BASE, default_name="x")
    d = c.to_dict()
    assert d["name"] == "x"
    assert d["solver"] == {
        "name": "admm_sharing",
        "epochs": 100,
        "rho": 1.0,
        "rho_parties": "fixed",
        "z_tol": 1e-10,
        "form": "hu",
        "order": "jacobi",
        "relaxation": 1.0,
        "rho_schedule": "fixed",
        "rho_min": None,
        "rho_max": None,
        "rho_every": 2,
        "rho_change": 10.0,
        "acceleration": "none",
        "anderson_memory": 5,
        "z_update": "safeguarded",
        "blas_threads": None,
    }
    assert d["privacy"] == {
        "sigma": 0.0,
        "form": "output",
        "delta": None,
        "epsilon": None,
        "neighbours": "column",
        "clip": None,
        "b1": 10.0,
        "input_clip": None,
        "calibration": "sound",
        "accountant": "pld",
        "label_epsilon": None,
        "label_delta": 1e-5,
        "label_clip": None,
        "replayable_noise": True,
        "budget_epsilon": None,
    }
    assert d["run"] == {"seed": 0, "repeats": 1, "eval_every": 1}
    sgd = config_from_dict({**BASE, "solver": {"name": "fdml_sgd"}}).to_dict()
    assert sgd["solver"] == {
        "name": "fdml_sgd",
        "epochs": 100,
        "batch_size": 100,
        "lr": 0.3,
        "lr_schedule": "inv_sqrt",
        "lr_step_epochs": 100,
        "lr_gamma": 0.1,
        "init_scale": 0.01,
    }
    assert sgd["privacy"]["form"] == "output"
    dp = config_from_dict({**BASE, "privacy": {"epsilon": 4.0, "delta": 1e-5, "clip": 1.0}})
    assert dp.privacy.accounting and dp.privacy.private and dp.privacy.form == "output"
    # a run that claims a guarantee draws its noise from OS entropy unless asked otherwise
    assert dp.privacy.claims_guarantee and not dp.privacy.replayable_noise


@pytest.mark.parametrize(
    "patch, message",
    [
        (
            {"solver": {"rhoo": 1}},
            "unknown key 'solver.rhoo'; valid keys in [solver] for admm_sharing: name, epochs, rho, rho_parties, z_tol",
        ),
        (
            {"solver": {"lr": 0.1}},
            "solver.lr does not apply to admm_sharing (it is a key of fdml_sgd); its keys: name, epochs, rho, rho_parties, z_tol",
        ),
        ({"solver": {"name": "fdml_sgd", "rho": 1}}, "solver.rho does not apply to fdml_sgd"),
        (
            {"solver": {"name": "fdml_sgd", "lr_schedule": "cosine"}},
            "solver.lr_schedule = 'cosine' is not one of: constant, inv_sqrt, step",
        ),
        ({"privacy": {"sigma": -0.1}}, "privacy.sigma must be >= 0, got -0.1"),
        ({"privacy": {"form": "input"}}, "privacy.form = 'input' is not one of: variable, variable_whitened, output"),
        (
            {"solver": {"name": "fdml_sgd"}, "privacy": {"form": "variable"}},
            "privacy.form = 'variable' is not one of: output",
        ),
        (
            {"privacy": {"eps": 1}},
            "unknown key 'privacy.eps'; valid keys in [privacy] for admm_sharing: sigma, form, delta, epsilon",
        ),
        ({"privacy": {"epsilon": 1}}, "privacy.epsilon needs privacy.delta"),
        ({"privacy": {"epsilon": 0, "delta": 1e-5}}, "privacy.epsilon must be > 0, got 0"),
        ({"privacy": {"epsilon": -1, "delta": 1e-5}}, "privacy.epsilon must be > 0, got -1"),
        ({"privacy": {"epsilon": 0.5, "delta": 1.0}}, "privacy.delta must be in (0, 1), got 1"),
        ({"privacy": {"epsilon": 0.5, "delta": 0}}, "privacy.delta must be in (0, 1), got 0"),
        ({"privacy": {"epsilon": 2, "delta": 1e-5}}, "accounting mode (privacy.delta) needs privacy.clip"),
        ({"privacy": {"epsilon": 0.5, "sigma": 1, "delta": 1e-5}}, "give privacy.sigma or privacy.epsilon, not both"),
        (
            {"privacy": {"epsilon": 0.5, "delta": 1e-5, "form": "variable"}},
            "privacy.form = 'variable' cannot be accounted",
        ),
        (
            {"privacy": {"epsilon": 0.5, "delta": 1e-5, "accountant": "gdp"}},
            "privacy.accountant = 'gdp' is not one of: pld, rdp",
        ),
        (
            {"solver": {"name": "fdml_sgd"}, "privacy": {"delta": 1e-5}},
            "unknown key 'privacy.delta'; valid keys in [privacy] for fdml_sgd: sigma, form",
        ),
        ({"solver": {"name": "nope"}}, "solver.name = 'nope' is not one of: admm_sharing, fdml_sgd"),
        ({"run": {"repeats": 0}}, "run.repeats must be >= 1"),
        ({"objective": {"regularizer": "l1"}}, "objective.regularizer = 'l1': admm_sharing supports l2sq"),
        ({"network": {"nodes": 3}}, "[network] applies to network solvers only"),
        ({"name": "a\nb"}, "name must be a non-empty string without '/' or control characters"),
        ({"extra": {}}, "unknown key 'extra'; valid top-level keys: name, data, preprocessing, partition"),
        ({"solver": {"rho": "big"}}, "solver.rho must be a number, got 'big' (str)"),
        ({"solver": {"rho": True}}, "solver.rho must be a number"),
        ({"solver": {"rho": 0}}, "solver.rho must be > 0, got 0"),
        ({"objective": {"lam": -1}}, "objective.lam must be >= 0, got -1"),
        ({"solver": {"epochs": 2.5}}, "solver.epochs must be an integer, got 2.5 (float)"),
        ({"solver": {"epochs": 0}}, "solver.epochs must be >= 1"),
        ({"objective": {"loss": "hinge"}}, "objective.loss = 'hinge' is not one of: logistic, squared"),
        ({"objective": {"reduction": "avg"}}, "objective.reduction = 'avg' is not one of: sum, mean, unit_mean"),
        ({"partition": {"columns": [66, "57"]}}, "partition.columns[1] must be an integer"),
        (
            {"partition": {"columns": [66, 57], "ranges": [[0, 1]]}},
            "exactly one of columns, ranges, indices; got columns, ranges",
        ),
        ({"preprocessing": {"intercept": "yes"}}, "preprocessing.intercept must be true or false"),
        (
            {"partition": {"intercept": True, "columns": [1]}},
            "partition.intercept moved to the [preprocessing] section: set preprocessing.intercept",
        ),
        (
            {"partition": {"normalize_rows": True, "columns": [1]}},
            "partition.normalize_rows moved to the [preprocessing] section: set preprocessing.normalize_rows",
        ),
        (
            {"preprocessing": {"scaling": "robust"}},
            "preprocessing.scaling = 'robust' is not one of: none, standard, minmax, clip",
        ),
        ({"preprocessing": {"scaling": "minmax", "range": [1, 1]}}, "preprocessing.range: bounds need lower < upper"),
        ({"preprocessing": {"normalise_rows": True}}, "unknown key 'preprocessing.normalise_rows'"),
        ({"data": {}}, "data.dataset is required"),
        ({"solver": 3}, "'solver' must be a table"),
    ],
)
def test_errors_name_the_key(patch, message):
    raw = {**BASE, **patch}
    with pytest.raises(ConfigError) as exc:
        config_from_dict(raw)
    assert message in str(exc.value)


def test_overrides_parse_toml_values():
    assert parse_override("solver.rho=2") == (["solver", "rho"], 2)
    assert parse_override("objective.loss=squared") == (["objective", "loss"], "squared")
    assert parse_override("partition.columns=[60, 63]") == (["partition", "columns"], [60, 63])
    raw = apply_overrides(BASE, ["solver.rho=0.5", "run.seed=3"])
    c = config_from_dict(raw)
    assert c.solver.rho == 0.5 and c.run.seed == 3
    assert "solver" not in BASE  # the input is not modified


def test_override_errors():
    with pytest.raises(ConfigError, match="expects key=value"):
        parse_override("solver.rho")
    with pytest.raises(ConfigError, match="unknown key 'solver.rh'"):
        config_from_dict(apply_overrides(BASE, ["solver.rh=1"]))


def test_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[solver\nrho = 1")
    with pytest.raises(ConfigError, match="bad.toml: invalid TOML"):
        load_config(bad)
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('[data]\ndataset = "a9a"\n[partition]\ncolumns = [1]\n[solver]\nrho = -1\n')
    with pytest.raises(ConfigError, match="^wrong.toml: solver.rho must be > 0"):
        load_config(wrong)


def test_a_dataset_set_to_its_own_fallback_is_the_stand_in_asked_for():
    """`--set data.dataset=<the fallback>` on a gisette config: nothing is left ignored."""
    config = load_config(shipped("fig1-gisette-admm"), ["data.dataset=synthetic:gisette-shaped"])
    assert config.data.dataset == config.data.fallback == "synthetic:gisette-shaped"


def test_audit_runs_is_the_configs_default_budget():
    """[audit] runs: `vfl audit`'s default draws for this config, validated, recorded only when
    set (older runs' config.json stay current)."""
    config = load_config(shipped("dp-admm-l2"))
    assert config.audit.runs == 400 and config.to_dict()["audit"] == {"runs": 400}
    plain = load_config(shipped("private-stacking-a9a"))
    assert plain.audit.runs == 100 and "audit" not in plain.to_dict()
    for bad, said in ((5, "audit.runs"), ("x", "audit.runs"), (10**7, "audit.runs")):
        with pytest.raises(ConfigError, match=said):
            config.with_overrides([f"audit.runs={bad!r}" if isinstance(bad, str) else f"audit.runs={bad}"])
    with pytest.raises(ConfigError, match="unknown key 'audit.budget'"):
        config.with_overrides(["audit.budget=3"])
