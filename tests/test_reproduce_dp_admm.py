"""`vfl reproduce dp-admm` and its configs (Huang et al., papers/003).

Fast tests: the shipped configs carry the paper's constants; the reproduce
module draws every figure and writes every CSV on a tiny synthetic stand-in
written into tmp_path (and resumes without rerunning); bad values of the new
keys are one ``error:`` line and exit 2 from the CLI, with nothing written.
The slow test checks the paper's qualitative claims on the real configs.
"""

import json
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import vfl
from scipy.special import expit
from shipped import paper_configs

import vfl.papers.dp_admm.figures as rep
import vfl.papers.dp_admm.timing as timing
from vfl.admm.local_solvers import _sigmoid, _softplus
from vfl.core.errors import ConfigError
from vfl.core.streams import Streams
from vfl.experiments.config import load_config
from vfl.experiments.registry import get_solver
from vfl.experiments.run_data import load_config_dataset
from vfl.experiments.runner import run_experiment
from vfl.experiments.settings import prepare
from vfl.experiments.sweep import plan_grid
from vfl.papers.dp_admm import PAPER
from vfl.privacy import dp_admm_epsilon

REPO = Path(__file__).resolve().parents[1]
CONFIGS = paper_configs("dp_admm")
SHIPPED = ("dp-admm-l1", "dp-admm-l2", "dp-admm-alg1", "dp-admm-alg2")
PRIVATE = ("dp-admm-l1", "dp-admm-l2", "dp-admm-alg2")


# ------------------------------------------------------------- the configs --
@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_configs_carry_the_papers_constants(name):
    c = load_config(CONFIGS / f"{name}.toml")
    assert c.name == name
    assert c.data.dataset == "adult"
    # the paper's cleaned file (Sec. VI: the 30162 complete records), stated as such
    assert c.data.options == {"missing": "drop", "cleaned_by": "Huang et al."}
    # spec D2 with public parameters: ordinal codes, min/max to [-1, 1] within Adult's
    # declared ranges (its published schema), unit rows
    assert c.preprocessing.values == {
        "encoding": "ordinal",
        "scaling": "minmax",
        "range": [-1.0, 1.0],
        "bounds": "schema",
        "normalize_rows": True,
    }
    p = c.partition  # Table II: 100 x 210 of 30162; 162 public and 9000 test rows of adult.test
    assert (p.agents, p.samples_per_agent, p.public, p.test, p.pool, p.held_out) == (
        100,
        210,
        162,
        9000,
        "train",
        "test_part",
    )
    o = c.objective
    assert (o.loss, o.reduction, o.lam) == ("logistic", "unit_mean", 0.17)
    assert c.objective.regularizer == ("l1" if name.endswith("l1") else "half_l2sq")
    assert (c.solver.epochs, c.solver.rho) == (100, 1.0)
    assert (c.run.seed, c.run.repeats) == (0, 10)  # one seed: common random numbers
    assert c.solver.name == {"dp-admm-alg1": "consensus_admm", "dp-admm-alg2": "consensus_admm_perturbed"}.get(
        name, "dp_admm"
    )
    if name in PRIVATE:
        # the paper's parameter keeps its own name: per iteration (eps_bar = 0.5009, Sec. VI)
        assert (c.privacy.epsilon_per_iteration, c.privacy.delta) == (0.05, 1e-3)
        assert c.privacy.claims_guarantee and c.privacy.replayable_noise
        assert "must not" in (CONFIGS / f"{name}.toml").read_text().lower()  # deployment note
        # the whole grid of the figures validates
        grid = {"privacy.epsilon_per_iteration": list(rep.EPSILONS), "privacy.delta": list(rep.DELTAS)}
        assert len(plan_grid(c, grid, [0], "/nonexistent")) == 24
    else:
        assert not c.privacy.claims_guarantee
    if name in ("dp-admm-alg1", "dp-admm-alg2"):  # spec D8: the same solver and tolerance
        assert (c.solver.local_solver, c.solver.inner_tol) == ("fista", 1e-6)
    if name == "dp-admm-alg2":
        assert c.privacy.sensitivity == "paper"


def test_paper_grid_and_required_configs():
    assert rep.EPSILONS == (0.01, 0.02, 0.05, 0.07, 0.1, 0.2)
    assert rep.DELTAS == (1e-3, 1e-4, 1e-5, 1e-6)
    assert PAPER.configs("all") == sorted(SHIPPED)
    assert PAPER.configs("fig2") == ["dp-admm-alg1", "dp-admm-l1"]
    assert PAPER.configs("table3") == ["dp-admm-alg1", "dp-admm-alg2", "dp-admm-l2"]
    assert PAPER.names == ("fig1", "fig2", "fig3", "fig4", "fig5", "fig6", "table3")
    runs = rep.figure_runs("all", CONFIGS, Path("/nonexistent"))
    assert {k: len(v) for k, v in runs.items()} == {"dp-admm-l1": 25, "dp-admm-l2": 26, "alg2": 24, "alg1": 2}
    # the paper's two reported values (Sec. VI) are what the legends of Figs. 4-5 show
    assert dp_admm_epsilon(0.05, 1e-3, 100) == pytest.approx(0.5009, abs=5e-5)
    assert dp_admm_epsilon(0.1, 1e-3, 100) == pytest.approx(1.0193, abs=5e-5)


# ------------------------------------------------------ tiny stand-in runs --
def _toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return repr(v)


def dump_toml(d: dict) -> str:
    lines = [f"{k} = {_toml_value(v)}" for k, v in d.items() if not isinstance(v, dict)]
    for section, table in d.items():
        if isinstance(table, dict):
            lines += ["", f"[{section}]"] + [f"{k} = {_toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


TINY_DATA = {"dataset": "synthetic", "options": {"n_train": 400, "n_test": 150, "n_features": 5, "seed": 3}}
TINY_PARTITION = {"agents": 4, "samples_per_agent": 25, "public": 40, "test": 100, "held_out": "test_part"}


def tiny_config(name: str, **changes) -> dict:
    """The shipped config ``name`` on a synthetic stand-in: 4 providers x 25 rows, T = 6, 2 runs."""
    raw = tomllib.loads((CONFIGS / f"{name}.toml").read_text())
    raw["data"] = dict(TINY_DATA)
    # the stand-in has no published schema: its features as generated, every row (train,
    # test, public) clipped to norm 1, a per-record step
    raw["preprocessing"] = {"row_clip": 1.0}
    raw["partition"] = dict(TINY_PARTITION)
    raw["solver"]["epochs"] = 6
    raw["run"]["repeats"] = 2
    for key, value in changes.items():
        section, _, k = key.partition("__")
        if value is None:
            raw.setdefault(section, {}).pop(k, None)
        else:
            raw.setdefault(section, {})[k] = value
    return raw


def tiny_configs(root: Path) -> Path:
    root.mkdir()
    for name in SHIPPED:
        (root / f"{name}.toml").write_text(dump_toml(tiny_config(name)))
    return root


@pytest.fixture
def tiny_grid(monkeypatch):
    monkeypatch.setattr(rep, "EPSILONS", (0.05, 0.2))
    monkeypatch.setattr(rep, "DELTAS", (1e-3, 1e-5))
    monkeypatch.setattr(rep, "FIG45_EPSILONS", (0.05, 0.2))
    monkeypatch.setattr(timing, "TABLE3_EPSILONS", (0.05, 0.2))
    monkeypatch.setattr(timing, "TABLE3_REPEATS", 2)


def _csv(path):
    return pd.read_csv(path, comment="#")


# Twelve figures: most of its CPU is matplotlib's savefig. As PNG alone: the PDF that
# engine.draw saves beside each PNG is checked by test_add_a_paper's reproduce (one figure).
@pytest.mark.slow
def test_reproduce_all_draws_every_figure_and_csv_then_resumes(tmp_path, tiny_grid):
    configs = tiny_configs(tmp_path / "configs")
    out = tmp_path / "dp-admm"
    log = []
    written = rep.reproduce("all", out, configs, jobs=1, echo=log.append)
    figures = [f"fig{i}" for i in range(1, 7)]
    expected = (
        {f"{f}.{ext}" for f in figures for ext in ("png", "csv")}
        | {f"fig{i}-final.csv" for i in (1, 3, 4, 5)}
        | {"table3.md", "table3.csv", "table3-timings.csv"}
    )
    assert {p.name for p in written} == expected
    assert all(p.is_file() and p.stat().st_size > 0 for p in written)
    # 4 + 1 (D11) l1, 4 + 2 (D11) l2, 4 Algorithm 2, 2 Algorithm 1 run directories
    assert any("17 run directories (0 kept, 17 run)" in line for line in log)

    for f in figures:  # every CSV says what its epsilons are and names the neighbours
        head = (out / f"{f}.csv").read_text().splitlines()[:4]
        assert any("one record (a, b) of one provider's dataset replaced" in h for h in head)
        assert any("epsilon_bar: the paper's moments accountant" in h for h in head)

    fig1 = _csv(out / "fig1.csv")
    dp = fig1[fig1["algorithm"] == "DP-ADMM (Alg. 3)"]
    assert set(dp.groupby(["epsilon", "delta"]).groups) == {(e, d) for e in (0.05, 0.2) for d in (1e-3, 1e-5)}
    assert set(dp["epoch"]) == set(range(7)) and set(fig1["n_runs"]) == {2}
    f = fig1.dropna(subset=["augmented_objective_mean"])  # iteration 0 has no ergodic average
    assert len(f) == len(fig1) - 6
    assert (f["augmented_objective_min"] <= f["augmented_objective_mean"] + 1e-12).all()
    assert {"Algorithm 1 (non-private)", "DP-ADMM (Alg. 3), no noise"} <= set(fig1["algorithm"])
    # README's numbers: each curve's last iteration, one row per curve, then F*
    final = _csv(out / "fig1-final.csv")
    last = f[f["epoch"] == 6]
    assert len(final) == len(last) + 1 and (final["epoch"].dropna() == 6).all()
    merged = final.merge(last, on=["algorithm", "epsilon", "delta"], suffixes=("", "_curve"))
    np.testing.assert_array_equal(merged["augmented_objective_mean"], merged["augmented_objective_mean_curve"])
    assert final["algorithm"].iloc[-1] == "optimum F* (pooled rows)"
    assert final["objective"].iloc[-1] > 0 and final["objective"].notna().sum() == 1

    fig6 = _csv(out / "fig6.csv")
    dp6 = fig6[fig6["algorithm"] == "DP-ADMM (Alg. 3)"]
    alg2 = fig6[fig6["algorithm"] == "Algorithm 2 (paper's sigma)"]
    assert len(dp6) == len(alg2) == 4
    for row in pd.concat([dp6, alg2]).itertuples():
        # the paper's accountant with T = 6, the same for both algorithms (Fig. 6's reading)
        paper = dp_admm_epsilon(row.epsilon, row.delta, 6)
        assert row.epsilon_bar == pytest.approx(paper, rel=1e-9)
        # the tight epsilon and dp-accounting's PLD of the same releases agree (PLD from above)
        assert row.epsilon_tight - 1e-9 <= row.epsilon_pld <= 1.01 * row.epsilon_tight + 1e-4
    # Algorithm 2 with the paper's sigma: the enforced sensitivity is N (rho + lam/N) / lam
    # times smaller (E13; 24x here, 590x in the paper's setting), and so is its tight epsilon
    assert (alg2["epsilon_tight"].to_numpy() < 0.1 * dp6["epsilon_tight"].to_numpy()).all()
    refs = fig6[fig6["algorithm"].str.startswith(("Algorithm 1", "optimum", "majority"))]
    assert len(refs) == 3 and refs["test_accuracy_mean"].between(0, 1).all()

    table = _csv(out / "table3.csv")
    assert set(zip(table["algorithm"], table["epsilon"].fillna(0))) == {
        ("Algorithm 1", 0),
        ("Algorithm 2", 0.05),
        ("Algorithm 2", 0.2),
        ("DP-ADMM", 0.05),
        ("DP-ADMM", 0.2),
    }
    assert (table["repetitions"] == 2).all() and (table["cpu_seconds_median"] > 0).all()
    assert table.loc[table["algorithm"] == "Algorithm 1", "ratio"].iloc[0] == 1.0
    md = (out / "table3.md").read_text()
    assert "| epsilon = 0.05 |" in md and "BLAS limited to 1 thread" in md

    # a second call redraws from the records: nothing is run or timed again
    stamps = {p: p.stat().st_mtime_ns for p in (out / "sweeps").glob("*/*/metrics.csv")}
    assert len(stamps) == 17
    log2 = []
    rep.reproduce("all", out, configs, jobs=1, echo=log2.append)
    assert any("(17 kept, 0 run)" in line for line in log2)
    assert any("timings kept" in line for line in log2)
    assert stamps == {p: p.stat().st_mtime_ns for p in stamps}


def test_one_figure_runs_only_what_it_draws(tmp_path, tiny_grid):
    configs = tiny_configs(tmp_path / "configs")
    runs = rep.figure_runs("fig4", configs, tmp_path / "out")
    labels = {k: sorted(r.path.name for r in v) for k, v in runs.items()}
    assert labels == {
        "dp-admm-l2": [
            "epsilon_per_iteration=0.05,delta=0.001,noise=False,seed=0",
            "epsilon_per_iteration=0.05,delta=0.001,seed=0",
            "epsilon_per_iteration=0.2,delta=0.001,noise=False,seed=0",
            "epsilon_per_iteration=0.2,delta=0.001,seed=0",
        ],
        "alg2": ["epsilon_per_iteration=0.05,delta=0.001,seed=0", "epsilon_per_iteration=0.2,delta=0.001,seed=0"],
        "alg1": ["regularizer=half_l2sq,seed=0"],
    }
    # common random numbers: every run of the figure shares the seed, so repeat r of
    # every algorithm and (epsilon, delta) trains and tests on the same split
    assert {r.config.run.seed for v in runs.values() for r in v} == {0}

    def setting(config):
        return prepare(config, dataset, get_solver(config.solver.name))

    first = runs["alg2"][0].config
    dataset, _ = load_config_dataset(first)
    splits = [
        setting(r.config).prepare(Streams(0, repeat=1))
        for r in (runs["alg2"][0], runs["dp-admm-l2"][-1], runs["alg1"][0])
    ]
    for other in splits[1:]:
        assert np.array_equal(other.data.A, splits[0].data.A)
        assert np.array_equal(other.test, splits[0].test)
    other = setting(first).prepare(Streams(0, repeat=2))
    assert not np.array_equal(other.data.A, splits[0].data.A)  # a fresh split per repeat


def test_fast_logistic_helpers_are_exact():
    """The clipped softplus / sigmoid of vfl.admm.local_solvers (used by every solver here)."""

    z = np.concatenate([np.linspace(-40, 40, 8001), np.linspace(-1e4, 1e4, 20001)])
    assert np.abs(_sigmoid(z) - expit(z)).max() <= 4e-16
    assert np.abs(_softplus(z) - np.logaddexp(0.0, z)).max() <= 1e-15
    ok = np.abs(z) < 700  # beyond: exact to 1e-304 absolute (exp is clipped there)
    assert np.allclose(_softplus(z[ok]), np.logaddexp(0.0, z[ok]), rtol=1e-14, atol=0)


def test_missing_config_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="dp-admm-l1.toml not found"):
        rep.figure_runs("fig2", tmp_path, tmp_path / "out")


# --------------------------------------------------------- CLI user errors --
BAD = {
    "epsilon_zero": ("dp-admm-l2", {"privacy__epsilon_per_iteration": 0.0}, "privacy.epsilon_per_iteration"),
    "epsilon_above_theorem1": ("dp-admm-l2", {"privacy__epsilon_per_iteration": 1.5}, "privacy.epsilon_per_iteration"),
    "alg2_epsilon_above_1": ("dp-admm-alg2", {"privacy__epsilon_per_iteration": 2.0}, "privacy.epsilon_per_iteration"),
    "both_epsilons": (
        "dp-admm-l2",
        {"privacy__epsilon": 1.0},
        "give privacy.epsilon (the run's total) or privacy.epsilon_per_iteration",
    ),
    "total_epsilon_beyond_theorem1": (
        "dp-admm-l2",
        {"privacy__epsilon_per_iteration": None, "privacy__epsilon": 50.0},
        "beyond Theorem 1's Gaussian mechanism",
    ),
    "delta_one": ("dp-admm-l1", {"privacy__delta": 1.0}, "privacy.delta"),
    "agents_too_many": ("dp-admm-l2", {"partition__agents": 100}, "partition"),
    "regularizer_unknown_to_solver": ("dp-admm-l2", {"objective__regularizer": "l2sq"}, "objective.regularizer"),
    "solver_key_of_another_solver": ("dp-admm-l1", {"solver__local_solver": "newton"}, "solver.local_solver"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_configs_are_one_error_line_and_exit_2(tmp_path, case):
    name, changes, key = BAD[case]
    path = tmp_path / f"{case}.toml"
    path.write_text(dump_toml(tiny_config(name, **changes)))
    out = tmp_path / "out"

    proc = vfl("run", "--config", path, "--out", out, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and key in lines[0], lines
    assert not out.exists() and proc.stdout == ""


# ------------------------------------------------------ the paper's claims --
@pytest.mark.slow
@pytest.mark.data
def test_papers_qualitative_claims_on_adult(data_dir):
    """Figs. 1-6 and Table III's claims on the shipped configs, with the first 3 of the 10 runs.

    Deterministic (replayable noise, one seed): the numbers quoted are these
    runs'; `vfl reproduce dp-admm` averages all 10 (README gives those).
    """

    def run(name, *over):
        c = load_config(CONFIGS / f"{name}.toml", ["run.repeats=3", *over])
        return run_experiment(c, data_dir=data_dir, with_baselines=False).metrics.iloc[-1]

    for reg, name in (("l1", "dp-admm-l1"), ("half_l2sq", "dp-admm-l2")):
        alg1 = run("dp-admm-alg1", f"objective.regularizer={reg}")
        assert 0.755 < alg1["test_accuracy"] < 0.77  # measured 0.7597 (l1), 0.761 (l2)
        dp = {
            (e, d): run(name, f"privacy.epsilon_per_iteration={e}", f"privacy.delta={d}")
            for e in (0.01, 0.05, 0.2)
            for d in (1e-3, 1e-6)
        }
        for d in (1e-3, 1e-6):
            obj = [dp[(e, d)]["augmented_objective"] for e in (0.01, 0.05, 0.2)]
            # Figs. 1 / 3: convergent, and faster (lower at T) with a larger epsilon
            assert obj[0] > obj[1] > obj[2] > alg1["augmented_objective"]
            assert obj[2] < 1.1 * alg1["augmented_objective"]
            acc = [dp[(e, d)]["test_accuracy"] for e in (0.01, 0.05, 0.2)]
            # Figs. 2 / 6: bad when eps_bar is very small (0.1), nearly as accurate as the
            # non-private algorithm once eps_bar >= 0.5, at every delta >= 1e-6
            assert acc[0] < acc[1] - 0.003
            assert min(acc[1:]) > alg1["test_accuracy"] - 0.01
        # a larger delta helps at the smallest epsilon (Figs. 1-3, 6)
        assert dp[(0.01, 1e-3)]["augmented_objective"] < dp[(0.01, 1e-6)]["augmented_objective"]
        assert dp[(0.01, 1e-3)]["test_accuracy"] > dp[(0.01, 1e-6)]["test_accuracy"]
    # Figs. 4-6: Algorithm 2 (the paper's sigma) is disrupted by its noise, at the same eps_bar
    for e in (0.05, 0.1):
        dp = run("dp-admm-l2", f"privacy.epsilon_per_iteration={e}")
        a2 = run("dp-admm-alg2", f"privacy.epsilon_per_iteration={e}")
        assert a2["epsilon_paper"] == dp["epsilon_paper"]  # 0.5009, 1.0193
        assert a2["augmented_objective"] > 100 * dp["augmented_objective"]
        assert a2["empirical_loss"] > 10 * dp["empirical_loss"]
        assert a2["test_accuracy"] < dp["test_accuracy"] - 0.15
    # (Table III's ordering of CPU times is a speed claim: `vfl reproduce dp-admm` measures it
    # into table3.csv and the docs' table, a benchmark, not a timed test)
    # Algorithm 2 works more as epsilon falls (its inner iterations: a count, not a time)
    cases = [c for c in timing._table3_cases(CONFIGS) if c[0] == "Algorithm 2" and c[1] in (0.01, 0.1)]
    t = timing.time_cases(cases, data_dir, repeats=1)
    inner = t[t["algorithm"] == "Algorithm 2"].set_index("epsilon")["inner_iterations"]
    assert inner[0.01] > inner[0.1]
