"""Issue 39: what a new user met in the summaries and figures (figures on tiny hand-made
records, no run)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.colors
import matplotlib.pyplot as plt
import pandas as pd
import pytest
from cli_helpers import vfl
from manifests import manifest

from vfl.admm.sharing.accounting import LABELS_NOTE
from vfl.experiments.records import RunRecord
from vfl.plots import dataset_title, plot_runs, plot_sweep_curves, plot_sweep_final

MANIFEST = manifest(
    name="own-stacking",
    solver={"name": "private_stacking", "title": "stacking", "iteration_name": "round"},
    dataset={"name": "csv", "provenance": {"files": {"train": {"given": "d/bank.csv"}}}},
)
BASELINES = {
    "sklearn_all_features": {"label": "sklearn, all features", "line": "--", "role": "all", "test_logloss": 0.40},
    "sklearn_local_only": {"label": "sklearn, party 1 only", "line": ":", "role": "local", "test_logloss": 0.55},
    "majority": {"label": "majority class (base rate)", "line": ":", "test_logloss": 0.69},
}


def _one_round():
    metrics = pd.DataFrame({"epoch": [0, 1], "test_logloss": [0.69, 0.93], "test_accuracy": [0.5, 0.8]})
    return RunRecord(path=Path("r"), config={}, manifest=MANIFEST, metrics=metrics, baselines=BASELINES)


def test_a_run_figure_names_the_file_draws_one_round_as_points_and_keeps_lines_apart():
    fig = plot_runs([_one_round()], metrics=("test_accuracy", "test_logloss"))
    ax = fig.axes[1]
    assert dataset_title(MANIFEST) == "own-stacking (bank.csv)"
    assert ax.get_title() == "own-stacking (bank.csv): test log loss"  # not "csv: ..."
    curve = ax.lines[0]
    assert curve.get_marker() == "o"  # two rows: points, not a line from round 0 to 1
    assert [t for t in ax.get_xticks() if 0 <= t <= 1] == [0, 1]  # no tick at 0.2 or 0.4
    styles = {line.get_label(): (line.get_linestyle(), matplotlib.colors.to_hex(line.get_color())) for line in ax.lines}
    assert styles["sklearn, party 1 only"] != styles["majority class (base rate)"]
    # every value and every reference inside the axes
    lo, hi = ax.get_ylim()
    assert lo < 0.40 and hi > 0.93
    # the legend sits below the axes, off the data and the reference lines
    fig.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    assert legend.y1 <= ax.get_window_extent().y0


def test_a_sweep_without_references_draws_and_keeps_error_bars_inside():
    """``_loss_scale`` took ``min(x)`` of one number when no reference was there (every
    DP-ADMM sweep-noise): TypeError, no figure."""
    final = pd.DataFrame(
        {
            "epsilon": [1.0, 2.0, 4.0, 8.0],
            "test_logloss_mean": [0.9, 0.7, 0.6, 0.55],
            "test_logloss_std": [0.3, 0.1, 0.05, 0.02],
        }
    )
    ax = plot_sweep_final(final, {}, "bank.csv: final test loss", method="DP-ADMM").axes[0]
    lo, hi = ax.get_ylim()
    assert lo <= 0.53 and hi >= 1.2  # the error bars' ends too
    agg = pd.DataFrame(
        {
            "epsilon": [4.0, 4.0, 8.0, 8.0],
            "epoch": [0, 1, 0, 1],
            "test_logloss_mean": [0.69, 0.6, 0.69, 0.55],
            "test_logloss_std": [0.0, 0.2, 0.0, 0.1],
        }
    )
    ax = plot_sweep_curves(agg, {}, "bank.csv: test loss vs target epsilon").axes[0]
    four, eight = (matplotlib.colors.to_rgb(line.get_color()) for line in ax.lines[:2])
    assert sum(abs(a - b) for a, b in zip(four, eight)) > 0.5  # epsilon 4 and 8 told apart
    assert ax.get_ylim()[1] >= 0.8


@pytest.fixture(autouse=True)
def _close():
    yield

    plt.close("all")


def test_a_summary_counts_one_message_and_says_the_references_follow_lam(tmp_path):
    (tmp_path / "st.toml").write_text(
        'name = "stacking"\n[data]\ndataset = "synthetic"\noptions = { n_train = 60, n_test = '
        "20, n_features = 6, seed = 3 }\n[partition]\ncolumns = [3, 3]\n[objective]\nlam = "
        '0.01\n[solver]\nname = "private_stacking"\nepochs = 1\n'
    )
    out = vfl("run", "--config", str(tmp_path / "st.toml"), "--out", str(tmp_path / "o"), "--no-figure").stdout
    assert "inference: 1 message, 160 bytes" in out  # not "1 messages"
    assert "references: fitted with this config's lam = 0.01 (another lam, other numbers on the same data)" in out


def test_admm_sharings_label_note_does_not_claim_the_users_data_is_a9a():
    assert LABELS_NOTE.endswith("can equal b_i for every training sample (it does on a9a)")
