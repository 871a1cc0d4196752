"""`vfl reproduce` end to end on tiny stand-in configs (the real ones run in CI's main job)."""

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from cli_helpers import invoke
from shipped import shipped

import vfl.papers.hu.figures as hu
from vfl.experiments.config import load_config
from vfl.papers import PAPERS, paper
from vfl.papers.hu import PAPER
from vfl.papers.hu.figures import FORM_VARIANTS, PRIVACY_SERIES, reproduce, settling

REPO = Path(__file__).resolve().parents[1]

TINY = """
name = "{name}"
[data]
dataset = "synthetic"
options = {{ n_train = 150, n_test = 60, n_features = 8, seed = 2 }}
[partition]
columns = [3, 5]
[solver]
{solver}
[sweep]
sigmas = [0.0, 0.5]
seeds = [0, 1]
"""


def tiny_configs(root: Path) -> Path:
    root.mkdir()
    for dataset in ("a9a", "gisette"):
        (root / f"fig1-{dataset}-admm.toml").write_text(
            TINY.format(name=f"fig1-{dataset}-admm", solver='name = "admm_sharing"\nepochs = 6')
        )
        (root / f"fig1-{dataset}-sgd.toml").write_text(
            TINY.format(name=f"fig1-{dataset}-sgd", solver='name = "fdml_sgd"\nepochs = 4\nbatch_size = 50')
        )
        (root / f"fig2-{dataset}.toml").write_text(
            TINY.format(name=f"fig2-{dataset}", solver='name = "admm_sharing"\nepochs = 5')
        )
    for name, privacy in (
        ("privacy-a9a", 'calibration = "lemma1"\nb1 = 10.0\nclip = 10.0'),
        ("privacy-a9a-column", "b1 = 1.0\nclip = 1.0"),
        ("privacy-a9a-row", 'neighbours = "row"\nb1 = 1.0\nclip = 1.0\ninput_clip = 2.0'),
    ):
        (root / f"{name}.toml").write_text(
            TINY.format(name=name, solver='name = "admm_sharing"\nepochs = 4').replace(
                "[sweep]\nsigmas = [0.0, 0.5]",
                f"[privacy]\ndelta = 1e-5\nepsilon = 8.0\nreplayable_noise = true\n{privacy}\n"
                "[sweep]\nepsilons = [1.0, 8.0]",
            )
        )
    return root


@pytest.mark.slow
def test_reproduce_all_writes_figures_and_csvs_then_resumes(tmp_path, monkeypatch):
    configs = tiny_configs(tmp_path / "configs")
    out = tmp_path / "figures"
    log = []
    written = reproduce("all", out, configs, jobs=1, echo=log.append)
    assert sorted(p.name for p in written) == sorted(
        f"{f}.png" for f in ("fig1", "bytes", "fig2", "fig3", "forms", "privacy")
    )
    for name in (
        "fig1-a9a-admm.csv",
        "fig1-a9a-sgd.csv",
        "fig1-gisette-admm.csv",
        "fig1-gisette-sgd.csv",
        "fig1-references.csv",
        "fig2-a9a.csv",
        "fig2-gisette.csv",
        "fig2-references.csv",
        "fig3-a9a.csv",
        "fig3-gisette.csv",
        "fig3-references.csv",
        "privacy.csv",
        "privacy-references.csv",
        "forms.csv",
        "fig1-summary.csv",
    ):
        assert (out / name).is_file(), name
    fig3 = pd.read_csv(out / "fig3-a9a.csv")
    assert fig3["sigma"].tolist() == [0.0, 0.5] and (fig3["n_seeds"] == 2).all()
    assert len(pd.read_csv(out / "fig1-a9a-sgd.csv")) == 5  # epochs 0..4
    priv = pd.read_csv(out / "privacy.csv")
    assert sorted(set(priv["accounting"])) == sorted(PRIVACY_SERIES.values())
    assert sorted(set(priv["epsilon"])) == [1.0, 8.0]
    summary = pd.read_csv(out / "fig1-summary.csv")
    assert summary["run"].tolist() == list(PAPER.figure("fig1").configs)
    last = pd.read_csv(out / "fig1-a9a-admm.csv")["test_logloss"].iloc[-1]
    assert summary.loc[0, "final_test_logloss"] == pytest.approx(last, rel=1e-9)
    # the forms figure: every form on both datasets; gisette's extra forms on one seed,
    # and its first form is fig2's own sweep (not rerun)
    forms = pd.read_csv(out / "forms.csv")
    assert sorted(set(forms["form"])) == sorted(FORM_VARIANTS)
    gis = forms[forms["dataset"] == "gisette"].groupby("form")["n_seeds"].max()
    assert gis[next(iter(FORM_VARIANTS))] == 2 and (gis.drop(next(iter(FORM_VARIANTS))) == 1).all()
    assert (tmp_path / "figures" / "sweeps" / "fig2-a9a-variable-normalized").is_dir()
    assert PAPER.names == ("fig1", "bytes", "fig2", "fig3", "forms", "privacy")
    # the bytes figure: the protocol's count (N values up and down per party per epoch for
    # ADMM sharing; per mini-batch for SGD), and the bytes each needs for a loss both reach
    table = pd.read_csv(out / "bytes.csv")
    admm = table[table["method"] == "ADMM sharing"].iloc[0]
    assert admm["bytes_per_epoch"] == 2 * 2 * 150 * 8
    sgd = table[table["method"] == "FDML SGD"].iloc[0]
    assert sgd["bytes_per_epoch"] == 2 * 2 * 150 * 8
    assert (table["target_test_logloss"] >= 0).all()
    assert admm["bytes_over_admm"] == 1.0

    # resume: every run kept; the drawing (tested above) is skipped to keep this fast

    def no_save(fig, path):
        plt.close(fig)
        return [Path(path)]

    monkeypatch.setattr(hu, "save_figure", no_save)
    log.clear()
    reproduce("fig1", out, configs, jobs=1, echo=log.append)
    assert sum("kept (already complete)" in line for line in log) == 4


def test_figure_configs_exist_and_validate():
    names = PAPER.configs("all")
    for name in names:
        config = load_config(shipped(name))
        assert config.name == name
    fig2 = load_config(shipped("fig2-a9a"))
    assert fig2.sweep.sigmas == [0.0, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0]  # the authors' + 10
    assert fig2.privacy.form == "output"  # the reading that reproduces the authors' curves
    assert load_config(shipped("fig2-gisette")).sweep.sigmas == [0.0, 0.1, 0.3, 1.0, 3.0, 10.0]
    sgd = load_config(shipped("fig1-a9a-sgd")).solver
    assert (sgd.batch_size, sgd.epochs) == (100, 300)  # the authors' settings


def test_settling_epoch():
    m = pd.DataFrame({"epoch": np.arange(6), "test_logloss": [0.69, 0.5, 0.31, 0.33, 0.302, 0.3]})
    out = settling(m, tol=0.005)
    assert out == {"epochs": 5, "final_test_logloss": 0.3, "settled_epoch": 4, "settle_tol": 0.005}
    assert settling(m.iloc[:1])["settled_epoch"] == 0  # a single point has settled at once


def test_reproduce_help_lists_every_figure_of_every_paper():
    result = invoke("reproduce", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    for key in PAPERS:
        for name in paper(key).names:
            assert f"{key} {name}" in text
