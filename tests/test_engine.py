"""The generic reproduce engine (papers/engine.py) on declared layouts, and bad declarations.

A figure declared as data (papers/spec.py) is drawn with the declared panels,
axes, titles and legends, and writes the declared CSV columns; a declaration
that names a config its figure does not list, an unknown aggregation, or a
function its figure module lacks is refused with a message naming it.
"""

from __future__ import annotations

import importlib
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from manifests import manifest

from vfl.papers import PAPERS, engine, paper
from vfl.papers.spec import Curve, Figure, Layout, Legend, Panel, Reference, Table


def record(offset: float, repeats: int = 2, dataset: str = "toyset") -> types.SimpleNamespace:
    """A run read back: metrics over 4 epochs and their repeats, references, a manifest."""
    reps = pd.DataFrame(
        [{"repeat": r, "epoch": e, "loss": offset + 1.0 / (1 + e) + 0.1 * r} for r in range(repeats) for e in range(4)]
    )
    return types.SimpleNamespace(
        path=Path("/nonexistent"),
        repeats=reps,
        metrics=reps.groupby("epoch", as_index=False)["loss"].mean(),
        manifest=manifest(dataset={"name": dataset}),
        config={"run": {"repeats": repeats}},
        baselines={"central": {"loss": offset}},
    )


def _figure(**changes) -> Figure:
    panels = (
        Panel(
            "left",
            (Curve("a", "loss", "method A", "C0"), Curve("b", "loss", "method B ({level})", "C1", "--", band=0)),
            xlabel="epoch",
            ylabel="loss",
            title="{dataset}: loss",
            yscale="log",
            references=(Reference("a", "central", "loss", "optimum {value:.2f}", style="-."),),
            legend=Legend("upper right", fontsize=6),
        ),
        Panel(
            "right",
            (Curve("b", "loss", "B at {level}", "viridis:level"),),
            xlabel="epoch",
            title="spread {runs}",
            legend=None,
        ),
    )
    spec = dict(
        name="toy",
        shows="a toy figure",
        configs=("a", "b"),
        layouts=(Layout("toy", panels, size=(6.0, 2.5), caption="Mean of {runs} runs.", suptitle="Toy figure"),),
        tables=(
            Table(
                "toy.csv",
                ("panel", "curve", "config", "epoch", "mean", "min", "max", "runs"),
                header=("what {figure} shows",),
            ),
            Table("toy-final.csv", rows="finals"),
            Table("toy-none.csv", rows="nothing"),
        ),
    )
    return Figure(**{**spec, **changes})


def _runs() -> dict:
    return {
        "a": [engine.Point({}, record(0.2))],
        "b": [engine.Point({"level": 1}, record(0.5)), engine.Point({"level": 2}, record(0.7))],
    }


def _hooks() -> types.ModuleType:
    hooks = types.ModuleType("toy_figures")
    hooks.finals = lambda table, runs, drawn, echo: pd.DataFrame(
        {"curve": [s.label for s in drawn], "final": [s.frame["mean"].iloc[-1] for s in drawn]}
    )
    hooks.nothing = lambda table, runs, drawn, echo: None
    return hooks


def test_a_declared_layout_draws_its_panels_and_writes_its_columns(tmp_path):
    figs = []

    def keep(fig, path):
        figs.append(fig)
        return [Path(path)]

    figures, tables = engine.draw(_figure(), _runs(), tmp_path, _hooks(), echo=lambda m: None, save=keep)
    assert [p.name for p in figures] == ["toy.png"]
    assert [p.name for p in tables] == ["toy.csv", "toy-final.csv"]  # "nothing": no file
    (fig,) = figs
    left, right = fig.axes
    assert left.get_title() == "toyset: loss" and right.get_title() == "spread 2"
    assert (left.get_xlabel(), left.get_ylabel(), left.get_yscale()) == ("epoch", "loss", "log")
    assert fig._suptitle.get_text() == "Toy figure"
    assert any(t.get_text() == "Mean of 2 runs." for t in fig.texts)
    # a curve per matching run (two grid points of "b"), then the reference line
    labels = [t.get_text() for t in left.get_legend().get_texts()]
    assert labels == ["method A", "method B (1)", "method B (2)", "optimum 0.20"]
    assert right.get_legend() is None
    assert [line.get_color() for line in right.get_lines()][0] != [line.get_color() for line in right.get_lines()][
        1
    ]  # one colour per level
    assert len(left.collections) == 1  # the band of A only (band=0 for B)

    table = pd.read_csv(tmp_path / "toy.csv", comment="#")
    assert list(table.columns) == ["panel", "curve", "config", "epoch", "mean", "min", "max", "runs"]
    assert (tmp_path / "toy.csv").read_text().startswith("# what toy shows\n")
    assert table.groupby(["panel", "curve"]).size().to_dict() == {
        ("left", "method A"): 4,
        ("left", "method B (1)"): 4,
        ("left", "method B (2)"): 4,
        ("right", "B at 1"): 4,
        ("right", "B at 2"): 4,
    }
    a = table[table["curve"] == "method A"]
    np.testing.assert_allclose(a["mean"], 0.2 + 1.0 / (1 + np.arange(4)) + 0.05)
    assert (a["max"] - a["min"]).round(12).eq(0.1).all() and (a["runs"] == 2).all()
    assert len(pd.read_csv(tmp_path / "toy-final.csv")) == 5


def test_a_facet_copies_the_panels_per_value_and_shares_the_runs_without_it(tmp_path):
    figs = []
    panel = Panel(
        "p", (Curve("a", "loss", "shared", "black"), Curve("b", "loss", "at {level}", "C0")), title="level {level}"
    )
    figure = Figure("facets", "per level", configs=("a", "b"), layouts=(Layout("facets", (panel,), facet="level"),))
    engine.draw(
        figure, _runs(), tmp_path, _hooks(), echo=lambda m: None, save=lambda fig, path: figs.append(fig) or [path]
    )
    axes = figs[0].axes
    assert [ax.get_title() for ax in axes] == ["level 1", "level 2"]
    assert [[line.get_label() for line in ax.get_lines()] for ax in axes] == [["shared", "at 1"], ["shared", "at 2"]]


def test_a_reference_beside_a_private_run_says_it_is_diagnostic(tmp_path):
    """A reference line drawn in a panel with a private run (or taken from one) is fitted on
    the rows that run protects: its label says "(diagnostic)"."""
    runs = _runs()
    rec = runs["b"][0].record
    rec.manifest = rec.manifest.replace(released={**rec.manifest.released.dump(), "private": True})
    figs = []
    engine.draw(
        _figure(), runs, tmp_path, _hooks(), echo=lambda m: None, save=lambda fig, path: figs.append(fig) or [path]
    )
    left = figs[0].axes[0]
    assert [t.get_text() for t in left.get_legend().get_texts()][-1] == "optimum 0.20 (diagnostic)"


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(configs=("a",)), "config 'b' is not one the figure lists"),
        (
            dict(tables=(Table("x.csv", rows="metrics", configs=("c",)),)),
            "table x.csv: config 'c' is not one the figure lists",
        ),
        (dict(tables=(Table("x.csv", rows="metrics"),)), "reads one config"),
        (dict(tables=(Table("toy.png"),)), "declared twice"),
        (dict(tables=(Table("x.csv", layout="other"),)), "no layout 'other'"),
        (dict(name="all"), "bad figure name"),
    ],
)
def test_a_bad_declaration_is_refused_when_declared(change, message):
    with pytest.raises(ValueError, match=message):
        _figure(**change)


def test_bad_curves_and_layouts_are_refused_when_declared():
    with pytest.raises(ValueError, match="aggregation 'median' is not one of"):
        Curve("a", "loss", "A", aggregate="median")
    with pytest.raises(ValueError, match="a panel name is declared twice"):
        Layout("x", (Panel("p"), Panel("p")))
    with pytest.raises(ValueError, match="3 panels do not fill 2 rows"):
        Layout("x", (Panel("p"), Panel("q"), Panel("r")), rows=2)


def test_a_named_function_the_module_lacks_is_a_clear_error(tmp_path):
    figure = _figure(tables=(Table("toy.csv", rows="no_such_rows"),))
    with pytest.raises(RuntimeError, match="toy_figures has no function 'no_such_rows'"):
        engine.draw(figure, _runs(), tmp_path, _hooks(), echo=lambda m: None, save=lambda fig, path: [path])


def _named(figure: Figure) -> set[str]:
    names = {figure.draw, *(t.rows for t in figure.tables)}
    for layout in figure.layouts:
        names |= {layout.fields, *(p.draw for p in layout.panels), *(p.ylim for p in layout.panels)}
    return names - {None, "curves", "metrics"}


@pytest.mark.parametrize("key", list(PAPERS))
def test_every_function_a_paper_declaration_names_is_in_its_figure_module(key):
    declared = paper(key)
    module = importlib.import_module(declared.module)
    for figure in declared.figures:
        missing = sorted(n for n in _named(figure) if not callable(getattr(module, n, None)))
        assert not missing, f"{key} {figure.name}: {declared.module} lacks {missing}"
        assert figure.layouts or figure.draw, f"{key} {figure.name} declares no layout"
