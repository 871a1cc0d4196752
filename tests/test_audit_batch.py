"""The audit's runs go through the mechanism together (vfl.experiments.audit.transcripts).

Ground truth: the same runs one at a time. A batch of runs carries a leading axis
through each solver's kernels (one code path), so every run's privacy loss and
realised mu must equal its run alone, up to the last bits of a different BLAS
order; the deployed sampler's releases lie on its grid; bad inputs are one line.
"""

import json

import numpy as np
import pytest
from cli_helpers import invoke
from test_audit_power import LDP
from test_held_out import dump_toml

from vfl.core.errors import ConfigError
from vfl.core.messages import RUNS, ProtocolError, validate
from vfl.core.releases import Release
from vfl.core.sampling import ExactSampler
from vfl.core.units import Units
from vfl.experiments.audit.transcripts import Direction, Follower, Recorder, chunks, run_direction
from vfl.experiments.config import config_from_dict
from vfl.experiments.run_plan import plan_run
from vfl.experiments.transport.dask_units import DaskUnits
from vfl.stacking.party import Released

SYNTHETIC = {"dataset": "synthetic", "options": {"n_train": 240, "n_test": 60, "n_features": 8, "seed": 5}}

CONFIGS = {
    "stacking": {
        "name": "b-stacking",
        "data": SYNTHETIC,
        "preprocessing": {"normalize_rows": True},
        "partition": {"columns": [4, 4]},
        "objective": {"lam": 1.0},
        "solver": {"name": "private_stacking", "epochs": 1},
        "privacy": {"epsilon": 1.0, "delta": 1e-5},
    },
    "dp_admm": {
        "name": "b-dp-admm",
        "data": SYNTHETIC,
        "preprocessing": {"row_clip": 1.0},
        "partition": {"agents": 5, "samples_per_agent": 30, "public": 40, "held_out": "test_part"},
        "objective": {"lam": 0.17, "reduction": "unit_mean", "regularizer": "half_l2sq"},
        "solver": {"name": "dp_admm", "epochs": 6},
        "privacy": {"epsilon_per_iteration": 0.1, "delta": 1e-3},
    },
    "alg2": {
        "name": "b-alg2",
        "data": SYNTHETIC,
        "preprocessing": {"row_clip": 1.0},
        "partition": {"agents": 5, "samples_per_agent": 30, "public": 40, "held_out": "test_part"},
        "objective": {"lam": 0.17, "reduction": "unit_mean", "regularizer": "half_l2sq"},
        "solver": {"name": "consensus_admm_perturbed", "epochs": 5, "local_solver": "fista", "inner_tol": 1e-6},
        "privacy": {"epsilon_per_iteration": 0.1, "delta": 1e-3, "sensitivity": "corrected"},
    },
    "sharing-row": {
        "name": "b-row",
        "data": SYNTHETIC,
        "partition": {"columns": [3, 5]},
        "objective": {"reduction": "sum", "lam": 1.0},
        "solver": {"name": "admm_sharing", "epochs": 4},
        "privacy": {
            "form": "output",
            "delta": 1e-5,
            "epsilon": 4.0,
            "calibration": "sound",
            "neighbours": "row",
            "b1": 1.0,
            "clip": 1.0,
            "input_clip": 2.0,
            "replayable_noise": True,
        },
    },
    "sharing-column": {
        "name": "b-column",
        "data": SYNTHETIC,
        "partition": {"columns": [3, 5]},
        "objective": {"reduction": "sum", "lam": 1.0},
        "solver": {"name": "admm_sharing", "epochs": 4},
        "privacy": {
            "form": "output",
            "delta": 1e-5,
            "epsilon": 4.0,
            "calibration": "sound",
            "neighbours": "column",
            "b1": 0.5,
            "clip": 1.0,
            "replayable_noise": True,
        },
    },
}


def _direction(name):
    config = config_from_dict(CONFIGS[name])
    plan = plan_run(config, None)
    return (Direction(plan.solver_cls, config, plan.first.objective), plan.first.data, config.solver.epochs)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_batch_of_runs_gives_each_run_alone(name):
    """Five runs of a canary pair (the adversarial candidates' last one: a crafted base where
    there is one), batched as 3 + 2 and one at a time on the same per-run streams."""
    direction, data, T = _direction(name)
    cls = direction.cls
    assert cls.audit_batch
    pairs = cls.neighbours(data, dict(direction.config.privacy.values), np.random.default_rng(0))
    pair = pairs[-1]
    base = data if pair.base is None else pair.base

    def streams():
        return [np.random.default_rng(s) for s in np.random.SeedSequence(3).spawn(5)]

    batched = run_direction(direction, base, pair.data, T, streams(), [3, 2])
    alone = [run_direction(direction, base, pair.data, T, [r], [1], batched=False) for r in streams()]
    np.testing.assert_allclose(batched.loss, [a.loss[0] for a in alone], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(batched.squares, [a.squares[0] for a in alone], rtol=1e-7, atol=1e-12)
    assert np.all(batched.squares > 0)  # the pair moves something in every run


def test_the_deployed_sampler_releases_on_its_grid_and_the_loss_uses_the_grid_means():
    """Two runs of one release through the exact sampler (grid step scale / 2^bits): the
    released values are integers on the grid, and each run's loss is the discrete
    Gaussian's log ratio at the rounded means."""

    bits = 6
    sampler = ExactSampler(bits)
    event = Release("gaussian", np.array([0, 1]), np.array([1.0, 1.0]), np.array([0.5, 2.0]), 3)
    mean = np.array([[0.11, -0.4, 1.3], [2.0, 0.01, -3.3]])
    other = mean + np.array([[0.3, 0.0, -0.2], [1.0, 0.5, 0.0]])
    rec = Recorder(2, sampler=sampler)
    released = rec(None, event, mean, None)
    follower = Follower(rec, grid_bits=bits)
    assert np.array_equal(follower(None, event, other, None), released)
    gamma = (event.scale / 2**bits)[None, :, None]
    q = released / gamma
    assert np.array_equal(q, np.rint(q))  # on the grid
    m, m2 = gamma * np.rint(mean / gamma), gamma * np.rint(other / gamma)
    s = event.scale[None, :, None]
    want = np.sum(((released - m2) ** 2 - (released - m) ** 2) / (2 * s * s), axis=(1, 2))
    np.testing.assert_allclose(follower.totals.loss, want, rtol=1e-10)
    np.testing.assert_allclose(
        follower.totals.squares,  # one mean for both runs: equal
        np.full(2, np.sum(((m - m2) / s) ** 2)),
        rtol=1e-12,
    )


def test_chunks_split_by_memory_and_refuse_what_cannot_fit():
    assert chunks(10, 1, None, "x") == [10]
    assert chunks(10, 1, 4, "x") == [4, 3, 3]
    assert chunks(11, 1, 10, "x") == [6, 5]  # never a chunk of one run
    assert chunks(12, 1, None, "x", batched=False) == [1] * 12
    with pytest.raises(ConfigError, match=r"--batch 1000 needs about .* GB .* per run"):
        chunks(1000, 1 << 40, 1000, "x")


@pytest.mark.slow
def test_bad_audit_inputs_are_one_line_and_exit_2(tmp_path):
    """GDP on Laplace releases, a calibration with too few runs for its power, and a batch
    that cannot fit: one line each, exit 2, nothing written."""

    ldp = tmp_path / "ldp.toml"
    ldp.write_text(dump_toml(LDP))
    stacking = tmp_path / "s.toml"
    stacking.write_text(dump_toml(CONFIGS["stacking"]))
    cases = [
        ((ldp, "--bound", "gdp"), "--bound gdp needs Gaussian releases"),
        ((stacking, "--bound", "kl", "--runs", 10, "--noise-scale", 0.33), "use --runs 20 or more"),
        ((stacking, "--batch", 10**12), "more than the"),
    ]
    for args, needle in cases:
        out = tmp_path / "out"
        r = invoke("audit", "--config", *args, "--out", out)
        assert r.returncode == 2, r.stdout
        assert r.stderr.strip().count("\n") == 0 and needle in r.stderr, r.stderr
        assert not out.exists()


@pytest.mark.slow
def test_audit_json_records_the_sampler_batches_and_family(tmp_path):
    stacking = tmp_path / "s.toml"
    stacking.write_text(dump_toml(CONFIGS["stacking"]))
    r = invoke(
        "audit", "--config", stacking, "--runs", 12, "--batch", 5, "--kinds", "adversarial", "--out", tmp_path / "au"
    )
    assert r.returncode == 0, r.stderr
    a = json.loads((tmp_path / "au" / "audit.json").read_text())
    assert a["sampler"] == "numpy" and a["batches"] == [4, 4, 4]
    assert a["family"]["pairs"] == a["pairs"] and a["family"]["claims"] == 1
    assert a["bounds"]["guarantee"] == "gdp" and 0 <= a["gdp_check"] <= 1
    assert "95% over the whole family" in r.stdout


@pytest.mark.slow
def test_vfl_audit_runs_the_deployed_sampler(tmp_path):
    """`--sampler exact`: the releases are the deployed mechanism's (means on the grid, exact
    discrete noise); the guarantee passes and the estimator's check holds on them."""
    stacking = tmp_path / "s.toml"
    stacking.write_text(dump_toml(CONFIGS["stacking"]))
    r = invoke(
        "audit",
        "--config",
        stacking,
        "--runs",
        12,
        "--sampler",
        "exact",
        "--kinds",
        "adversarial",
        "--out",
        tmp_path / "au",
    )
    assert r.returncode == 0, r.stderr
    assert "the deployed exact sampler" in r.stdout
    a = json.loads((tmp_path / "au" / "audit.json").read_text())
    assert a["sampler"] == "exact" and a["verdicts"]["guarantee"] == "PASS"
    assert a["gdp_check"] > 1e-3
    assert 0 < a["epsilon_refuted"]["guarantee"] < a["claims"]["guarantee"][0]


def test_only_the_audits_in_process_units_take_a_leading_axis_of_runs():
    """The runs' axis is accepted where the audit declares it (in-process units whose solver's
    observer returns R runs), never by a deployment's backend: the same message is refused."""

    reply = Released(models=np.zeros((3, 4)), shares=np.zeros((3, 2, 7)), moments=np.zeros((3, 2, 2)))
    validate(reply, Released, {"n": 2, "N": 7, RUNS: 3})
    with pytest.raises(ProtocolError, match=r"Released.models must have 1 dimension"):
        validate(reply, Released, {"n": 2, "N": 7})
    with pytest.raises(ProtocolError, match=r"Released.shares must have shape"):
        validate(reply, Released, {"n": 2, "N": 8, RUNS: 3})  # the rest still checked
    with pytest.raises(ProtocolError, match=r"Released.models must have 1 dimension"):
        validate(reply, Released, {"n": 2, "N": 7, RUNS: 4})  # another count of runs
    assert Units.runs is None and DaskUnits.runs is None
