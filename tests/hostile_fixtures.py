"""Hostile input: the fixtures a row of the table names, and the usual starts of a row.

Used by tests/test_hostile_inputs.py and the row modules tests/hostile_rows_*.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from manifests import MANIFEST
from shipped import shipped

REPO = Path(__file__).resolve().parents[1]
A9A = str(REPO / "configs" / "a9a.toml")
PRIVATE = str(shipped("private-stacking-a9a"))
HU_PRIVATE = str(shipped("privacy-a9a"))
LDP = str(shipped("ldp-admm-n10"))
DP_ADMM = str(shipped("dp-admm-l2"))

#: a small vertical config on generated data (nothing to download)
SMALL = """name = "small"
[data]
dataset = "synthetic"
options = { n_train = 60, n_test = 20, n_features = 6, seed = 3 }
[partition]
columns = [3, 3]
[solver]
epochs = 2
"""
#: a small config that claims a guarantee (privacy.delta set)
PRIV = (
    SMALL.replace('name = "small"', 'name = "priv"')
    + """[privacy]
form = "output"
delta = 1e-5
epsilon = 8.0
neighbours = "column"
b1 = 10.0
clip = 10.0
"""
)
METRICS = "epoch,objective,suboptimality,test_logloss\n0,2.0,1.0,0.69\n1,1.5,0.5,0.6\n"
#: a user CSV whose every row is well formed; rows below append or replace one
CSV = "a,b,c,y\n" + "".join(f"{i},{i % 3},{i % 5},{i % 2}\n" for i in range(20))


def _own(csv: str, *, label: str = 'label = "y"\n', columns: str = "[2, 1]"):
    """A config reading its sibling CSV (same stem), and that CSV."""

    def make(path: Path):
        path.with_suffix(".csv").write_text(csv)
        path.write_text(
            f'[data]\ndataset = "csv"\npath = "{path.with_suffix(".csv").name}"\n'
            f"{label}test_fraction = 0.5\n[partition]\ncolumns = {columns}\n"
            "[solver]\nepochs = 2\n"
        )

    return make


def _run(**files):
    """A complete run directory as write_run leaves it, some files replaced."""

    def make(path: Path):
        path.mkdir()
        config = {
            "name": "small",
            "data": {"dataset": "synthetic", "options": {"n_train": 60, "n_features": 6}},
            "partition": {"columns": [3, 3]},
            "solver": {"epochs": 2},
        }
        default = {
            "config.json": json.dumps(config),
            "manifest.json": json.dumps(MANIFEST),
            "baselines.json": "{}",
            "metrics.csv": METRICS,
        }
        for name, text in {**default, **files}.items():
            if text is not None:
                (path / name).write_text(text)

    return make


def _write(text: str):
    def make(path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    return make


#: files and directories a row names in its arguments, made before it runs
FIXTURES = {
    "small.toml": _write(SMALL),
    "priv.toml": _write(PRIV),
    "bad.toml": _write("[data\nx ="),
    "empty.toml": _write(""),
    "twice.toml": _write(SMALL + "[run]\nseed = 1\nseed = 2\n"),
    "section.toml": _write(SMALL + "[bogus]\nx = 1\n"),
    "fallback.toml": _write(SMALL.replace("[data]", '[data]\nfallback = "synthetic:a9a-shaped"')),
    "run": _run(),
    "run-none": _run(**{"metrics.csv": METRICS.replace("1.0,", ",").replace("0.5,", ",")}),
    "run-no-manifest": _run(**{"manifest.json": None}),
    "run-bad-json": _run(**{"manifest.json": "{bad"}),
    "run-manifest-list": _run(**{"manifest.json": "[1, 2]"}),
    "run-baselines-list": _run(**{"baselines.json": "[1, 2]"}),
    "run-config-list": _run(**{"config.json": "[1]"}),
    "run-config-unknown": _run(**{"config.json": '{"bogus": 1}'}),
    "run-privacy-scalar": _run(**{"manifest.json": json.dumps({**MANIFEST, "privacy": 3})}),
    "run-metrics-empty": _run(**{"metrics.csv": ""}),
    "run-metrics-header": _run(**{"metrics.csv": "epoch,objective\n"}),
    "run-metrics-cut": _run(**{"metrics.csv": METRICS[:-6]}),
    "run-metrics-text": _run(**{"metrics.csv": METRICS.replace("1.5", "x")}),
    "run-no-epoch": _run(**{"metrics.csv": "objective\n1\n"}),
    "audits/x/audit.json": _write("{bad"),
    "e.png": _write("an earlier figure"),
    "data.csv": _write(CSV),
    "empty.csv": _write(""),
    "header.csv": _write("a,b,y\n"),
    "ragged.csv": _write(CSV + "1,2,3,4,5\n"),
    "text.csv": _write(CSV.replace("3,0,3,1", "3,x,3,1")),
    "nan.csv": _write(CSV.replace("3,0,3,1", "3,nan,3,1")),
    "inf.csv": _write(CSV.replace("3,0,3,1", "3,inf,3,1")),
    "three.csv": _write(CSV + "1,1,1,7\n"),
    "const.csv": _write(CSV.replace(",1\n", ",0\n")),
    "data.libsvm": _write("1 1:1 2:3\n-1 2:1\n"),
    "text.libsvm": _write("1 1:x 2:3\n-1 2:1\n"),
    "nan.libsvm": _write("1 1:nan 2:3\n-1 2:1\n"),
    "dd/a9a": _write("1 1:1\n"),
    "own-empty.toml": _own(""),
    "own-header.toml": _own("a,b,c,y\n"),
    "own-ragged.toml": _own(CSV + "1,2\n"),
    "own-ragged-long.toml": _own(CSV + "1,2,3,4,5\n"),
    "own-text.toml": _own(CSV.replace("3,0,3,1", "3,x,3,1")),
    "own-nan.toml": _own(CSV.replace("3,0,3,1", "3,nan,3,1")),
    "own-inf.toml": _own(CSV.replace("3,0,3,1", "3,inf,3,1")),
    "own-gap.toml": _own(CSV.replace("3,0,3,1", "3,,3,1")),
    "own-three.toml": _own(CSV + "1,1,1,7\n"),
    "own-const.toml": _own(CSV.replace(",1\n", ",0\n")),
    "own-no-label.toml": _own(CSV, label=""),
    "own-label-missing.toml": _own(CSV, label='label = "zz"\n'),
    "own-parties.toml": _own(CSV, columns="[2, 2]"),
    # a private run, one value of b left out of its list: the width error points at the list
    "own-list.toml": _own(
        CSV,
        label='label = "y"\nlabels = [0, 1]\ncategorical_columns = ["b"]\nstratify = false\n',
        columns="[3, 3]\n[preprocessing]\n"
        'scaling = "none"\nnormalize_rows = true\n[preprocessing.categories]'
        '\nb = ["0", "1"]\n[privacy]\nepsilon = 8.0\ndelta = 1e-5\nform = '
        '"output"\nneighbours = "row"\nb1 = 1.0\nclip = 1.0\ninput_clip = 2.0',
    ),
    "own-good.toml": _own(CSV),
}


# the usual start of a row: `vfl run` / sweep / sweep-noise of small.toml, a privacy
# calculation, an audit of priv.toml, `vfl datasets inspect PATH`
def R(*extra):
    return ["run", "--config", "small.toml", "--out", "o", *extra]


def S(*extra):
    return ["sweep", "--config", "small.toml", "--out", "o", "--grid", "solver.rho=1,2", *extra]


def N(*extra):
    return ["sweep-noise", "--config", "small.toml", "--out", "o", *extra]


def P(*extra):
    return ["privacy", "--sigma", "1", "--epochs", "10", "--delta", "1e-5", *extra]


def A(*extra):
    return ["audit", "--config", "priv.toml", "--out", "o", *extra]


def I(path, *extra):  # noqa: E743 (I for inspect, as the table reads)
    return ["datasets", "inspect", path, *extra]
