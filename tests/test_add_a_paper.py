"""Adding a paper is one folder and one line (docs/architecture.md, "How to add a paper").

The folder below is a whole paper, written here into a temporary directory:
its declaration (a figure and a solver it brings), its figure code, and its
config. The one line is its entry in ``papers.PAPERS``. Nothing else in
the repository changes, and `vfl solvers`, `vfl run`, `vfl reproduce
--help` and `vfl reproduce` pick it up.
"""

from __future__ import annotations

import textwrap

import pandas as pd
import pytest
from cli_helpers import vfl

from vfl import papers
from vfl.experiments.registry import registered

FOLDER = {
    "__init__.py": '''
        """Toy et al. 2026: decentralized GD with half the step."""
        from vfl.papers.spec import Figure, Paper

        PAPER = Paper(
            key="toy",
            title="Toy et al. 2026, half-step decentralized GD",
            source="Toy et al. 2026, Sec. 4",
            module="toy_paper.figures",
            figures=(Figure("curve", "Fig. 1: log10 error vs iteration", configs=("toy-run",)),),
            solvers={"half_step_dgd": "toy_paper.solver:HalfStepDGD"},
        )
    ''',
    "solver.py": '''
        from vfl.core.solver import Reference
        from vfl.decentralized.gd import DGD


        class HalfStepDGD(DGD):
            """DGD whose step is half of eta_k (Toy et al. 2026, eq. (1))."""

            name = "half_step_dgd"
            title = "half-step DGD (toy)"
            reference = Reference("Toy et al. 2026", "Algorithm 1", "(1)")

            def eta(self, k):
                return 0.5 * super().eta(k)
    ''',
    "figures.py": """
        from pathlib import Path

        from vfl.experiments.reproduce import ensure_run, figure_config
        from vfl.plots import plt, save_figure

        from . import PAPER


        def reproduce(which, out, configs, data_dir=None, jobs=1, echo=print):
            out = Path(out)
            record = ensure_run(figure_config(configs, "toy-run"), out / "runs" / "toy-run",
                                data_dir, echo)
            curve = record.metrics[["epoch", "log10_error"]]
            curve.to_csv(out / "curve.csv", index=False)
            fig, ax = plt.subplots()
            ax.plot(curve["epoch"], curve["log10_error"])
            ax.set_xlabel("iteration")
            ax.set_ylabel("log10 error")
            return save_figure(fig, out / "curve.png") + [out / "curve.csv"]
    """,
    "configs/toy-run.toml": """
        name = "toy-run"
        [data]
        dataset = "synthetic"
        options = { n_train = 120, n_test = 40, n_features = 4, seed = 1 }
        [preprocessing]
        normalize_rows = true
        [partition]
        samples_per_agent = 10
        pool = "train+test"
        test = 20
        [network]
        graph = "gnm"
        nodes = 5
        edges = 6
        [objective]
        loss = "logistic"
        reduction = "unit_mean"
        regularizer = "half_l2sq"
        lam = 5
        [solver]
        name = "half_step_dgd"
        epochs = 4
        [privacy]
        replayable_noise = true
    """,
}


@pytest.fixture
def toy_paper(tmp_path, monkeypatch):
    """The paper's folder, and the one line that lists it."""
    for name, text in FOLDER.items():
        path = tmp_path / "toy_paper" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(papers.PAPERS, "toy", "toy_paper")
    return tmp_path / "toy_paper"


@pytest.mark.pdf
def test_a_paper_is_one_folder_and_one_line(toy_paper, tmp_path):
    listing = vfl("solvers")
    assert listing.returncode == 0, listing.stderr
    assert "half_step_dgd" in listing.stdout and "Toy et al. 2026" in listing.stdout

    help_text = vfl("reproduce", "--help").stdout
    assert "toy curve" in help_text and "log10 error vs iteration" in help_text

    out = tmp_path / "figures"
    proc = vfl("reproduce", "toy", "--out", out, "--jobs", 1)
    assert proc.returncode == 0, proc.stderr
    for name in ("curve.png", "curve.pdf", "curve.csv", "runs/toy-run/metrics.csv"):
        assert (out / "toy" / name).is_file(), name
    curve = pd.read_csv(out / "toy" / "curve.csv")
    assert list(curve["epoch"]) == [0, 1, 2, 3, 4]

    # the same config alone, by path: its own solver, the usual records
    run = tmp_path / "run"
    proc = vfl("run", "--config", toy_paper / "configs" / "toy-run.toml", "--out", run)
    assert proc.returncode == 0, proc.stderr
    assert pd.read_csv(run / "metrics.csv")["log10_error"].tolist() == curve["log10_error"].tolist()


def test_its_solver_is_half_the_step_of_dgd(toy_paper, tmp_path):
    # the paper's solver runs its own update, not DGD's
    runs = {}
    for name in ("half_step_dgd", "dgd"):
        out = tmp_path / name
        proc = vfl(
            "run", "--config", toy_paper / "configs" / "toy-run.toml", "--set", f"solver.name={name}", "--out", out
        )
        assert proc.returncode == 0, proc.stderr
        runs[name] = pd.read_csv(out / "metrics.csv")["log10_error"]
    assert runs["half_step_dgd"].iloc[0] == runs["dgd"].iloc[0]  # the same x^0
    assert (runs["half_step_dgd"].iloc[1:] != runs["dgd"].iloc[1:]).all()


def test_a_paper_may_not_take_a_familys_solver_name(toy_paper, monkeypatch):
    monkeypatch.setitem(papers.paper("toy").solvers, "dgd", "toy_paper.solver:HalfStepDGD")
    with pytest.raises(RuntimeError, match="dgd"):
        registered()
