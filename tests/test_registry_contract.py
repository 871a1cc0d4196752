"""The contract, walked over the registry: every registered solver, whatever its family.

Each solver builds from a small config of its setting, runs two iterations
through the generic runner, writes only the columns it declares (plus the
runner's own), gives the same numbers for the same seed, and, if it claims a
guarantee, states its neighbouring relation, reports its releases as events
and passes a small audit. A new solver is covered by adding its registry
line; its privacy keys go in PRIVATE below if it has any.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

import numpy as np
import pytest

from vfl.core.solver import Setting
from vfl.experiments.audit import audit_config
from vfl.experiments.config import config_from_dict
from vfl.experiments.registry import get_solver, solver_names
from vfl.experiments.run_plan import plan_run
from vfl.experiments.run_result import BASE_COLUMNS, COMMUNICATION_COLUMNS, PRIVACY_COLUMNS
from vfl.experiments.runner import run_experiment

SETTINGS = {
    Setting.VERTICAL: {
        "data": {"dataset": "synthetic", "options": {"n_train": 120, "n_test": 40, "n_features": 6, "seed": 3}},
        "preprocessing": {"normalize_rows": True},
        "partition": {"columns": [3, 3]},
        "objective": {"lam": 1.0, "reduction": "sum"},
    },
    Setting.HORIZONTAL: {
        "data": {"dataset": "synthetic", "options": {"n_train": 200, "n_test": 60, "n_features": 5, "seed": 2}},
        "preprocessing": {"row_clip": 1.0},
        "partition": {"agents": 4, "samples_per_agent": 30, "public": 40, "held_out": "test_part"},
        "objective": {"lam": 0.17, "reduction": "unit_mean", "regularizer": "half_l2sq"},
    },
    Setting.NETWORK: {
        "data": {"dataset": "synthetic", "options": {"n_train": 150, "n_test": 40, "n_features": 5, "seed": 3}},
        "preprocessing": {"normalize_rows": True},
        "partition": {"samples_per_agent": 10, "pool": "train+test", "test": 20},
        "network": {"graph": "gnm", "nodes": 5, "edges": 6},
        "objective": {"lam": 5.0, "reduction": "unit_mean", "regularizer": "half_l2sq"},
    },
}

#: privacy keys that make each private mechanism claim a guarantee (simulation noise)
PRIVATE = {
    "admm_sharing": {
        "form": "output",
        "delta": 1e-5,
        "epsilon": 4.0,
        "calibration": "sound",
        "neighbours": "row",
        "b1": 1.0,
        "clip": 1.0,
        "input_clip": 2.0,
    },
    "private_stacking": {"epsilon": 2.0, "delta": 1e-5},
    "consensus_admm_perturbed": {"epsilon_per_iteration": 0.5, "delta": 1e-3},
    "dp_admm": {"epsilon_per_iteration": 0.5, "delta": 1e-3},
    **{name: {"delta": 1e-5} for name in ("ldp_admm", "ldp_gd", "ldp_gd_minmax")},
}

EPOCHS = {"private_stacking": 1}  # one release, by construction


def _config(name, seed=0):
    cls = get_solver(name)
    raw = {
        "name": f"contract-{name}",
        **SETTINGS[cls.setting],
        "solver": {"name": name, "epochs": EPOCHS.get(name, 2)},
        "run": {"seed": seed},
    }
    if name in PRIVATE:
        raw["privacy"] = {**PRIVATE[name], "replayable_noise": True}
    return config_from_dict(raw)


def _numbers(metrics):
    timing = [c for c in metrics.columns if c.endswith("_time_s")]
    return metrics.drop(columns=timing).to_numpy(dtype=float)


@pytest.mark.parametrize("name", solver_names())
def test_every_solver_keeps_the_contract(name):
    cls = get_solver(name)
    assert cls.name == name and isinstance(cls.setting, Setting)
    assert cls.reference.paper and cls.title
    for p in cls.params + cls.privacy_params:
        assert p.help, f"{name}: parameter {p.name} has no help"
    config = _config(name)
    first = run_experiment(config, with_baselines=False)
    # the runner's columns (every claimed epsilon is epsilon_<claim>), then the solver's
    allowed = (*BASE_COLUMNS, *PRIVACY_COLUMNS, *COMMUNICATION_COLUMNS, "epsilon_*", "wall_time_s", *cls.columns)
    undeclared = {c for c in first.metrics.columns if not any(fnmatchcase(c, p) for p in allowed)}
    assert not undeclared, f"{name} writes undeclared columns {sorted(undeclared)}"
    assert len(first.metrics) == EPOCHS.get(name, 2) + 1  # row 0 and one per iteration
    again = run_experiment(config, with_baselines=False)
    np.testing.assert_array_equal(_numbers(first.metrics), _numbers(again.metrics))
    kinds = first.manifest.dump()["released"]["columns"]
    assert set(kinds) >= set(first.metrics.columns) - {"epoch"}
    assert set(kinds.values()) <= {"released", "diagnostic"}
    # every protocol counts what it sends: something each iteration, the totals in
    # metrics.csv equal to the per-unit detail, and (public sizes only) released
    comm = first.communication
    training = comm.query("phase == 'training'")
    last = first.metrics.iloc[-1]
    assert last["messages"] > 0 and last["bytes"] > 0, f"{name} counts no message"
    assert (
        training.query("unit > 0")["sent_messages"].sum() + training.query("unit == 0")["sent_messages"].sum()
        == last["messages"]
    )
    assert training["sent_bytes"].sum() == training["received_bytes"].sum()  # every byte arrives
    assert training["sent_bytes"].sum() == last["bytes"]
    if name in PRIVATE:
        assert kinds["messages"] == kinds["bytes"] == "released"
    # scoring the test rows is declared (what each unit sends per row, or a model held by one
    # endpoint) and counted apart from training, at the last iteration
    assert cls.inference is not None and cls.inference.note, f"{name} declares no inference"
    scored = comm.query("phase == 'inference'")
    assert set(scored["epoch"]) == {int(last["epoch"])}
    declared = first.manifest.dump()["communication"]["inference"]
    assert (
        scored["sent_bytes"].sum()
        == scored["received_bytes"].sum()
        == declared["bytes"]
        == first.manifest.dump()["result"]["inference_bytes"]
    )
    assert (
        (declared["bytes"] > 0) == (cls.inference.values_per_row > 0) == (cls.setting == Setting.VERTICAL)
    )  # only columns split over parties need messages


@pytest.mark.parametrize("name", sorted(PRIVATE))
def test_every_guarantee_states_its_relation_its_events_and_passes_an_audit(name):
    config = _config(name)
    assert config.privacy.claims_guarantee
    plan = plan_run(config)
    solver = plan.solver
    solver.step()
    events = solver.releases()
    assert events and all(np.all(np.isfinite(e.sensitivity)) for e in events)
    assert solver.privacy_info().dump()["neighbouring"]
    report = audit_config(config, K=10, seed=0, kinds=("natural",), max_pairs=1)
    assert report.verdict("guarantee") == "PASS"
