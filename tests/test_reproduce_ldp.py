"""`vfl reproduce ldp` (Xiao et al.): shipped configs, every figure and CSV on tiny configs,
resuming, bad graph configs, and (slow) the paper's claims on the real configs."""

import tomllib
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from cli_helpers import vfl
from shipped import paper_configs

import vfl.papers.ldp.figures as ldp
from vfl.core.errors import ConfigError, DivergedError
from vfl.core.layouts import NetworkData
from vfl.core.streams import Streams
from vfl.decentralized import make_graph, paper_objective
from vfl.experiments.config import load_config
from vfl.experiments.registry import get_solver
from vfl.papers import resolve
from vfl.papers.ldp import PAPER

REPO = Path(__file__).resolve().parents[1]
CONFIGS = paper_configs("ldp")
#: graph suffix -> (nodes, edges) of the paper
GRAPHS = {"n10": (10, 20), "n100": (100, 200), "n10e40": (10, 40)}
#: the paper's constants per solver (App. E, spec 4.6)
CONSTANTS = {
    "ldp_admm": {"D": 10.0, "zeta": 0.5},
    "op_admm": {"D": 10.0, "zeta": 0.5},
    "dvp_admm": {"D": 10.0, "zeta": 0.5},
    "pp_admm": {"penalty0": 0.5, "penalty_growth": 1.02, "zeta": 0.5},
    "random_penalty_admm": {"D": 10.0, "zeta": 0.5},
    "fixed_admm": {"D": 10.0, "zeta": 0.5},
    "noisy_consensus_gd": {"eta0": 1.0, "eta_growth": 0.9},
    "ldp_gd_minmax": {"eta0": 1.0, "eta_growth": 0.93},
    "ldp_gd": {"eta0": 1.0, "eta_growth": 0.95},
    "dgd": {"eta0": 1.0, "eta_growth": 0.95},
}
PRIVATE = {"ldp_admm", "op_admm", "dvp_admm", "pp_admm", "noisy_consensus_gd", "ldp_gd_minmax"}


def ldp_configs() -> list[Path]:
    return sorted(CONFIGS.glob("ldp-*.toml"))


def test_shipped_configs_validate_and_carry_the_papers_constants():
    paths = ldp_configs()
    names = {p.stem for p in paths}
    needed = set(PAPER.configs("all"))
    assert needed == names, f"configs without a figure: {names - needed}; missing: {needed - names}"
    for path in paths:
        c = load_config(path)
        graph = path.stem.rsplit("-", 1)[1]
        nodes, edges = GRAPHS[graph]
        assert c.name == path.stem
        assert c.data.dataset == "adult"
        # App. E's cleaned file (the 45,222 complete records), stated as such
        assert c.data.options == {"missing": "drop", "cleaned_by": "Xiao et al."}
        # App. E with public parameters: ordinal codes, min/max to [0, 1] within Adult's
        # declared ranges (every value lands in [0, 1]), unit rows
        assert c.preprocessing.values == {
            "encoding": "ordinal",
            "scaling": "minmax",
            "range": [0.0, 1.0],
            "bounds": "schema",
            "normalize_rows": True,
        }
        assert (c.partition.samples_per_agent, c.partition.pool) == (100, "train+test")
        n = c.network
        assert (n.graph, n.nodes, n.edges, n.labels, n.exchange) == ("gnm", nodes, edges, "paper01", "plain")
        o = c.objective
        assert (o.loss, o.reduction, o.regularizer, o.lam) == (
            "logistic",
            "unit_mean",
            "half_l2sq",
            nodes,
        )  # 1/2 ||x||^2 in every f_i
        assert c.solver.epochs == 100 and c.run.repeats == 10
        for key, value in CONSTANTS[c.solver.name].items():
            assert c.solver.values[key] == value, (path.name, key)
        assert c.privacy.replayable_noise is True and not c.privacy.claims_guarantee
        if c.solver.name in PRIVATE:
            assert (c.privacy.values["beta0"], c.privacy.values["beta_growth"]) == (1.0, 1.02)
            assert c.privacy.values["noise"] is True and c.privacy.values["B_inf"] is None
            if "mechanism" in c.privacy.values:
                assert c.privacy.values["mechanism"] == "matched"
            assert "privacy.delta" in path.read_text()  # what setting delta would do
        elif "noise" in c.privacy.values:  # Algorithm 2 in Fig. D: without noise
            assert c.privacy.values["noise"] is False


def test_brief_config_is_the_shipped_one():
    c = load_config(CONFIGS / "ldp-admm-n10.toml")
    assert (c.solver.name, c.network.nodes, c.network.edges) == ("ldp_admm", 10, 20)


@pytest.mark.parametrize("output", list(ldp.PANELS))
def test_every_config_of_a_figure_shares_seed_data_partition_network(output):
    """Common random numbers: run r of every method sees the same graph, data and x^0."""
    names = sorted({c.config for curves in ldp.PANELS[output].values() for c in curves})
    shared = set()
    for name in names:
        d = load_config(CONFIGS / f"{name}.toml").to_dict()
        shared.add(repr([d["data"], d["preprocessing"], d["partition"], d["network"], d["objective"], d["run"]]))
    assert len(shared) == 1, names


def test_dispatcher_knows_the_paper():
    assert resolve("ldp", None) == [("ldp", "all")]
    assert resolve("ldp", "figC") == [("ldp", "figC")]
    with pytest.raises(ConfigError, match="figD"):
        resolve("ldp", "fig9")


# ------------------------------------------------------------ tiny configs --
TINY_GRAPHS = {"n10": (4, 4), "n100": (6, 7), "n10e40": (4, 6)}


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


def tiny_configs(root: Path) -> Path:
    """Every shipped ldp config, shrunk: synthetic data, 4-6 agents, 4 iterations, 2 runs."""
    root.mkdir()
    for path in ldp_configs():
        raw = tomllib.loads(path.read_text())
        nodes, edges = TINY_GRAPHS[path.stem.rsplit("-", 1)[1]]
        solver = "\n".join(f"{k} = {_toml_value(v)}" for k, v in raw["solver"].items() if k != "epochs")
        privacy = "\n".join(f"{k} = {_toml_value(v)}" for k, v in raw.get("privacy", {}).items())
        (root / path.name).write_text(f"""
name = "{raw["name"]}"
[data]
dataset = "synthetic"
options = {{ n_train = 150, n_test = 40, n_features = 5, seed = 3 }}
[preprocessing]
normalize_rows = true
[partition]
samples_per_agent = 10
pool = "train+test"
test = 20
[network]
graph = "gnm"
nodes = {nodes}
edges = {edges}
[objective]
loss = "logistic"
reduction = "unit_mean"
regularizer = "half_l2sq"
lam = {nodes}
[solver]
{solver}
epochs = 4
[privacy]
{privacy}
[run]
seed = 5
repeats = 2
""")
    return root


@pytest.fixture
def small_fig1(monkeypatch):
    """Fig. 1 on a few points (the quadrature costs about 0.15 s a point)."""

    monkeypatch.setattr(ldp, "FIG1_SURFACE_OMEGAS", np.linspace(0.1, 1.0, 4))
    monkeypatch.setattr(ldp, "FIG1_SURFACE_BETAS", np.array([2.0, 6.0, 10.0]))
    monkeypatch.setattr(ldp, "FIG1_EXACT_OMEGAS", np.array([0.1, 0.5]))
    monkeypatch.setattr(ldp, "FIG1_BETAS", (2.0, 10.0))


def _read(path: Path) -> tuple[str, pd.DataFrame]:
    text = path.read_text()
    header = " ".join(line[2:] for line in text.splitlines() if line.startswith("# "))
    return header, pd.read_csv(path, comment="#")


@pytest.mark.slow
def test_reproduce_all_draws_every_figure_and_csv_then_resumes(tmp_path, small_fig1, joblib_in_process):
    configs = tiny_configs(tmp_path / "configs")
    out = tmp_path / "ldp"
    log = []
    written = ldp.reproduce("all", out, configs, jobs=2, echo=log.append)
    assert joblib_in_process == [2]  # the jobs > 1 branch: one pool for every run
    figures = ["fig1", "fig2", "figB", "figC", "figD-1", "figD-2"]
    assert sorted(p.name for p in written) == sorted(f"{f}.png" for f in figures)
    assert all(p.stat().st_size > 0 for p in written)
    assert any("running 19 config(s)" in line for line in log)

    # Fig. 1: the surface and the exact points, eq. (11) within 1% of the exact value
    _, surface = _read(out / "fig1.csv")
    assert len(surface) == 4 * 3 and surface["gamma_eq11"].between(0, 1).all()
    header, exact = _read(out / "fig1-exact.csv")
    assert "App. D, take t = -alpha B_inf in the edge bands" in header and len(exact) == 4
    assert np.allclose(exact["gamma_eq11"], exact["gamma_exact"], rtol=0.01)
    assert (exact["gamma_bound_corrected"] >= exact["gamma_exact"] - 1e-9).all()

    for output, panels in ldp.PANELS.items():
        header, table = _read(out / f"{output}.csv")
        assert "log10 of (1/N)" in header and "not a meaningful metric" in header
        if "privacy" in panels:
            assert "ex post and data dependent" in header and "NOT a worst-case" in header
        expected = {(p, c.label) for p, curves in panels.items() for c in curves}
        assert set(zip(table["panel"], table["curve"])) == expected
        for _, g in table.groupby(["panel", "curve"]):
            assert g["epoch"].tolist() == [0, 1, 2, 3, 4]
            assert (g["runs"] == 2).all()
            assert (g["min"] <= g["mean"] + 1e-12).all() and (g["mean"] <= g["max"] + 1e-12).all()
        # common random numbers: every method starts from the same x^0 and x*
        acc = table[(table["panel"] == "accuracy") & (table["epoch"] == 0)]
        assert np.allclose(acc["mean"], acc["mean"].iloc[0]) and np.allclose(acc["min"], acc["min"].iloc[0])
        if output in ldp.CLAIMS:
            sheader, summary = _read(out / f"{output}-summary.csv")
            assert "not worst-case guarantees" in sheader
            claims = summary[summary["panel"] == "claim"]
            assert len(claims) == len(ldp.CLAIMS[output])
            for (_, num, den, _), row in zip(ldp.CLAIMS[output], claims.itertuples()):
                last = table[table["epoch"] == 4].set_index(["config", "column"])["mean"]
                assert row.mean == pytest.approx(last[num] / last[den])
                assert row.min <= row.mean * (1 + 1e-9) and row.mean <= row.max * (1 + 1e-9)
    # the worst case of Algorithm 1 is d alpha B_inf sum_k beta_k, the same in every run
    _, fig2 = _read(out / "fig2.csv")
    worst = fig2[fig2["column"] == "privacy_loss_worst"].set_index("epoch")
    d, B_inf, alpha = 5, 2 / 10, 1 / 10  # features in [-1, 1] here: B_inf = 2 / b_i
    beta = 1.02 ** np.arange(1, 5)
    assert worst.loc[1:, "mean"].to_numpy() == pytest.approx(np.cumsum(d * alpha * B_inf * beta))
    assert (worst["min"] == worst["max"]).all()

    runs = sorted((out / "runs").iterdir())
    assert len(runs) == 19
    for run in runs:
        assert {"config.json", "manifest.json", "metrics.csv", "baselines.json", "metrics_repeats.csv"} <= {
            p.name for p in run.iterdir()
        }
    stamps = {r.name: (r / "metrics.csv").stat().st_mtime_ns for r in runs}

    # resume: every run kept; the drawing (tested above) is skipped to keep this fast

    def no_save(fig, path):
        plt.close(fig)
        return [Path(path)]

    log = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ldp, "save_figure", no_save)
        ldp.reproduce("all", out, configs, jobs=2, echo=log.append)
    assert sum("kept (already complete)" in line for line in log) == 19
    assert not any("running" in line for line in log)
    assert stamps == {r.name: (r / "metrics.csv").stat().st_mtime_ns for r in sorted((out / "runs").iterdir())}


def test_one_figure_runs_only_its_configs(tmp_path):
    configs = tiny_configs(tmp_path / "configs")
    out = tmp_path / "ldp"
    log = []
    written = ldp.reproduce("figD", out, configs, jobs=1, echo=log.append)
    assert sorted(p.name for p in written) == ["figD-1.png", "figD-2.png"]
    assert sorted(p.name for p in (out / "runs").iterdir()) == list(PAPER.figure("figD").configs)
    with pytest.raises(ConfigError, match="no figure"):
        ldp.reproduce("fig3", out, configs, echo=log.append)


def test_missing_config_is_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        ldp.reproduce("fig2", tmp_path / "out", tmp_path, echo=lambda s: None)


# ------------------------------------------- fixes in the algorithm files --
def _complete_problem(N, m=5, d=3, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.random((N, m, d))
    A /= np.linalg.norm(A, axis=2, keepdims=True)
    b = (rng.random((N, m)) < 0.75).astype(float)
    data = NetworkData(make_graph("complete", nodes=N), A, b, rng.standard_normal((N, d)))
    return data, paper_objective(N, m)


@pytest.mark.parametrize("name", ["ldp_admm", "random_penalty_admm"])
def test_dense_graph_divergence_is_reported_with_the_dual_step_ratio(name):
    """Complete graph, N = 100, the paper's zeta = 0.5 and D = 10: zeta lambda_max(L) / D = 5
    diverges (it used to run on silently to log10 error 53); zeta = 0.1 converges."""

    data, obj = _complete_problem(100)
    privacy = {"noise": False} if name == "ldp_admm" else {}
    s = get_solver(name)(data, objective=obj, params={}, privacy=privacy, streams=Streams(0), iterations=100)
    with pytest.raises(DivergedError, match=r"zeta \* lambda_max\(L\) / D = 0.5 \* 100 / 10 = 5"):
        for _ in range(100):
            s.step()
    assert s.iteration < 40
    ok = get_solver(name)(
        data, objective=obj, params={"zeta": 0.1}, privacy=privacy, streams=Streams(0), iterations=100
    )
    for _ in range(100):
        ok.step()
    assert ok.evaluate()["log10_error"] < -4


@pytest.mark.parametrize(
    "name, delta, mode, guarantee",
    [
        ("ldp_admm", None, "simulation", False),
        ("ldp_admm", 1e-5, "accounting", True),
        ("noisy_consensus_gd", 1e-5, "accounting", True),
        ("dvp_admm", 1e-5, "accounting", False),  # objective perturbation: nothing enforced
        ("pp_admm", None, "simulation", False),
    ],
)
def test_privacy_info_says_what_the_run_claims(name, delta, mode, guarantee):
    """The keys every summary reads: without them `vfl run` printed an empty warning."""

    data, obj = _complete_problem(4, m=10)
    privacy = {} if delta is None else {"delta": delta}
    info = (
        get_solver(name)(data, objective=obj, params={}, privacy=privacy, streams=Streams(0), iterations=3)
        .privacy_info()
        .dump()
    )
    assert (info["mode"], info["dp_guarantee"]) == (mode, guarantee)
    if mode == "simulation":
        assert "privacy.delta" in info["note"]
    if delta is not None and not guarantee:
        assert "no epsilon of this run is a guarantee" in info["warning"]
    if name == "ldp_admm" and delta is None:
        assert "ex post and data dependent" in info["note"]
    if name == "pp_admm":
        assert "RECONSTRUCTION" in info["note"]


# --------------------------------------------------------- bad graphs --
BAD_BASE = """
name = "bad"
[data]
dataset = "synthetic"
options = {{ n_train = 150, n_test = 40, n_features = 5, seed = 3 }}
[preprocessing]
normalize_rows = true
[partition]
samples_per_agent = 10
[network]
{network}
[objective]
loss = "logistic"
reduction = "unit_mean"
regularizer = "half_l2sq"
lam = 4
[solver]
name = "ldp_admm"
epochs = 3
"""

BAD_GRAPHS = {
    "more_edges_than_pairs": ('graph = "gnm"\nnodes = 4\nedges = 7', "at most 6 edges"),
    "one_node": ('graph = "gnm"\nnodes = 1\nedges = 1', "nodes must be >= 2"),
    "fewer_edges_than_nodes_minus_1": ('graph = "gnm"\nnodes = 5\nedges = 3', "needs at least 4 edges"),
    "secret_sharing_not_complete": (
        'graph = "gnm"\nnodes = 4\nedges = 4\nexchange = "secret_sharing"',
        "needs graph = 'complete'",
    ),
    "disconnected_file": ('graph = "file"\nnodes = 4\npath = "{path}"', "not connected"),
}


@pytest.mark.parametrize("case", list(BAD_GRAPHS))
def test_bad_graph_config_is_one_error_line_and_exit_2(tmp_path, case):
    edges = tmp_path / "edges.txt"
    edges.write_text("0 1\n2 3\n")  # two components
    network, message = BAD_GRAPHS[case]
    config = tmp_path / "bad.toml"
    config.write_text(BAD_BASE.format(network=network.format(path=edges)))
    out = tmp_path / "out"

    proc = vfl("run", "--config", config, "--out", out, cwd=tmp_path, env={"MPLBACKEND": "Agg"})
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], lines
    assert not out.exists()


# ------------------------------------------------------------- slow --
@pytest.mark.slow
@pytest.mark.data
def test_paper_claims_on_the_real_configs(data_dir, tmp_path):
    """`vfl reproduce ldp all` on the shipped configs, against the paper's claims.

    Where a claim holds the test asserts it; where it does not, it pins what
    we measure instead (and says so), so the README's statements stay true.
    """
    out = tmp_path / "ldp"
    # one process: the suite's workers hold every core, and a pool of two cost 6 s more CPU
    # (the pool's branch: test_reproduce_all_draws_every_figure_and_csv_then_resumes)
    ldp.reproduce("all", out, CONFIGS, data_dir=data_dir, jobs=1, echo=lambda s: None)

    # Fig. 1: the spec's table of eq. (11) (5.4) and the claim "larger omega and beta ...
    # lead to better amplification" (gamma decreasing in both)
    _, pts = _read(out / "fig1-exact.csv")
    table = {(0.1, 2): 0.9517, (0.1, 10): 0.7878, (0.5, 6): 0.5187, (1.0, 2): 0.6324, (1.0, 10): 0.1995}
    for (omega, beta), value in table.items():
        row = pts[np.isclose(pts["omega"], omega) & np.isclose(pts["beta"], beta)]
        assert row["gamma_eq11"].item() == pytest.approx(value, abs=1e-4)
    assert pts[np.isclose(pts["omega"], 0.1) & np.isclose(pts["beta"], 10)]["gamma_exact"].item() == pytest.approx(
        0.7906, abs=1e-4
    )  # erratum 10
    _, surface = _read(out / "fig1.csv")
    grid = surface.pivot(index="omega", columns="beta", values="gamma_eq11").to_numpy()
    assert (np.diff(grid, axis=0) < 0).all() and (np.diff(grid, axis=1) < 0).all()

    def final(output):
        _, t = _read(out / f"{output}.csv")
        last = t[t["epoch"] == 100]
        return {(r.panel, r.curve): r for r in last.itertuples()}

    def claim(output, i=0):
        _, s = _read(out / f"{output}-summary.csv")
        return s[s["panel"] == "claim"].iloc[i]

    for output in ("fig2", "figB"):
        f = final(output)
        acc = {label: r.mean for (panel, label), r in f.items() if panel == "accuracy"}
        # "Algorithm 1 has almost the same performance as prior works": holds (within 0.2)
        assert max(acc.values()) - min(acc.values()) < 0.2, acc
        assert all(-1.3 < v < -0.95 for v in acc.values()), acc
        # worst case sum_k d alpha beta_k B_inf = 4.459 (spec 5.6); [42] about 5.0 (spec P3)
        assert f["privacy", "worst case sum d alpha beta B_inf"].mean == pytest.approx(4.459, abs=1e-3)
        assert f["privacy", "[42] (reconstruction)"].mean == pytest.approx(5.02, abs=0.01)
        realized = f["privacy", "Algorithm 1, realized (Thm 2.2, ex post)"].mean
        assert realized < f["privacy", "[43] (reconstruction)"].mean
        # "about 30% reduction on average": we measure 26-28%, close to the claim
        assert 0.65 < claim(output)["mean"] < 0.8

    f = final("figC")
    _, tc = _read(out / "figC.csv")
    # "the privacy loss of Algorithm 2* is only 30% of [45]": we measure about 34%
    assert 0.25 < claim("figC")["mean"] < 0.4
    assert f["privacy", "[45] (pure Laplace: its worst case)"].mean == pytest.approx(1.567, abs=1e-3)
    assert f["privacy", "Algorithm 2*, worst case"].mean == pytest.approx(2.571, abs=1e-3)
    # "Algorithm 1 ... has better accuracy but worse privacy loss": holds
    a1 = f["accuracy", "Algorithm 1 (D = 10)"].mean
    a45 = f["accuracy", "[45] noisy consensus GD (eta = 0.9^k)"].mean
    a2s = f["accuracy", "Algorithm 2* (eta = 0.93^k)"].mean
    assert a1 < min(a45, a2s) - 0.3
    assert (
        f["privacy", "Algorithm 1, realized (ex post)"].mean > f["privacy", "[45] (pure Laplace: its worst case)"].mean
    )
    # "2* has a worse convergence at the beginning": holds (it peaks above [45] early on)
    early = tc[(tc["panel"] == "accuracy") & (tc["epoch"] <= 20)]
    peak = early.groupby("curve")["mean"].max()
    assert peak["Algorithm 2* (eta = 0.93^k)"] > peak["[45] noisy consensus GD (eta = 0.9^k)"]
    # "... and almost the same utility loss" at the end: does NOT hold here: 2* ends about
    # 0.24 higher in log10 error (1.7x the distance to x*)
    assert 0.1 < a2s - a45 < 0.45

    # Fig. D: "randomization ... does not incur accuracy loss"
    for output in ("figD-1", "figD-2"):
        f = final(output)
        rnd = f["accuracy", "ADMM, random penalties (Alg. 1 exact step)"].mean
        fix = f["accuracy", "ADMM, fixed penalties"].mean
        assert rnd < -4.5 and abs(rnd - fix) < 0.3  # holds for ADMM
    gd1, dgd1 = (final("figD-1")["accuracy", k].mean for k in ("Algorithm 2 (random weights)", "DGD, fixed weights"))
    gd2, dgd2 = (final("figD-2")["accuracy", k].mean for k in ("Algorithm 2 (random weights)", "DGD, fixed weights"))
    assert abs(gd2 - dgd2) < 0.15  # holds for GD at N = 100
    # does NOT hold for GD at N = 10: Algorithm 2 stalls near 1e-4 while DGD goes on
    assert 0.3 < gd1 - dgd1 < 0.9

    # `vfl run --config papers/ldp/configs/ldp-admm-n10.toml` makes the usual records
    run = out / "runs" / "ldp-admm-n10"
    assert {
        "config.json",
        "manifest.json",
        "metrics.csv",
        "baselines.json",
        "metrics_repeats.csv",
        "metrics_stats.csv",
    } <= {p.name for p in run.iterdir()}
