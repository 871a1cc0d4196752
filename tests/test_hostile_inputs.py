"""Hostile input, one table: every case is one `error:` line, exit 2, and nothing left behind.

Each row is (id, the command's arguments, a fragment of the one line). The
command runs in-process in an empty directory holding only the fixtures its
arguments name (:data:`FIXTURES`); afterwards that directory, the temporary
directory and the cache hold exactly what they held before. Every row fails
in validation, before any work. Add a row for every case found.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from cli_helpers import assert_one_line_error, invoke
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


CASES = [
    (
        "privacy-epsilon-tiny",
        ["privacy", "--epsilon", "1e-12", "--epochs", "10", "--delta", "1e-5"],
        "--epsilon = 1e-12: must be >= 1e-06",
    ),
    (
        "privacy-epsilon-huge",
        ["privacy", "--epsilon", "1e6", "--epochs", "10", "--delta", "1e-5"],
        "--epsilon = 1e+06: must be <= 700",
    ),
    (
        "run-repeats-huge",
        ["run", "--config", A9A, "--set", "run.repeats=100000000", "--out", "o"],
        "run.repeats must be <= 10000",
    ),
    (
        "run-epsilon-tiny",
        ["run", "--config", PRIVATE, "--set", "privacy.epsilon=1e-9", "--out", "o"],
        "privacy.epsilon = 1e-09: must be >= 1e-06",
    ),
    ("run-resume-nothing-there", ["run", "--resume", "nothere"], "nothere: no such run directory"),
    (
        "run-resume-with-config",
        ["run", "--resume", "nothere", "--config", A9A],
        "--resume takes the config and options from the checkpoint: leave out --config",
    ),
    (
        "run-release-only-without-guarantee",
        ["run", "--config", A9A, "--release-only", "--out", "o"],
        "--release-only applies to a run that claims a privacy guarantee",
    ),
    (
        "run-moved-partition-key",
        ["run", "--config", A9A, "--set", "partition.normalize_rows=true", "--out", "o"],
        "set preprocessing.normalize_rows",
    ),
    (
        "run-moved-data-option",
        ["run", "--config", A9A, "--set", "data.options.normalize_rows=true", "--out", "o"],
        "moved to the [preprocessing] section",
    ),
    (
        "run-preprocessing-zero-range",
        [
            "run",
            "--config",
            A9A,
            "--set",
            "preprocessing.scaling=clip",
            "--set",
            "preprocessing.bounds=[1, 1]",
            "--out",
            "o",
        ],
        "preprocessing.bounds: bounds need lower < upper",
    ),
    (
        "audit-runs-in-config-too-few",
        ["audit", "--config", "priv.toml", "--set", "audit.runs=3", "--out", "o"],
        "audit.runs must be >= 10, got 3",
    ),
    (
        "run-private-fitted-scaling",
        ["run", "--config", "priv.toml", "--set", "preprocessing.scaling=standard", "--out", "o"],
        "set preprocessing.stats",
    ),
    (
        "audit-dask-backend",
        ["audit", "--config", "priv.toml", "--set", "run.backend=dask", "--out", "o"],
        "runs through `vfl run`",
    ),
    (
        "sweep-grid-key-twice",
        ["sweep", "--config", A9A, "--grid", "solver.rho=1,2", "--grid", "solver.rho=3", "--out", "o"],
        "--grid solver.rho is given twice",
    ),
    (
        "sweep-grid-value-twice",
        ["sweep", "--config", A9A, "--grid", "solver.rho=1,1", "--out", "o"],
        "--grid solver.rho lists 1 twice",
    ),
    (
        "fetch-mirror-not-a-url",
        ["datasets", "fetch", "a9a", "--mirror", "notaurl", "--data-dir", "dd", "--force"],
        "--mirror 'notaurl' is not a URL",
    ),
    (
        "fetch-mirror-unreachable",
        ["datasets", "fetch", "a9a", "--mirror", "http://127.0.0.1:9/", "--data-dir", "dd", "--force"],
        "point --data-dir or VFL_DATA_DIR at a directory",
    ),
    (
        "audit-noise-scale-zero",
        ["audit", "--config", PRIVATE, "--noise-scale", "0", "--out", "o"],
        "--noise-scale must be a finite number > 0, got 0.0",
    ),
    (
        "audit-noise-scale-nan",
        ["audit", "--config", PRIVATE, "--noise-scale", "nan", "--out", "o"],
        "--noise-scale must be a finite number > 0, got nan",
    ),
    ("audit-out-under-a-file", ["audit", "--config", PRIVATE, "--out", "afile/x"], "is a file, not a directory"),
    (
        "audit-out-exists",
        ["audit", "--config", PRIVATE, "--out", "full"],
        "already exists (use --overwrite to replace it)",
    ),
    ("audit-claims-nothing", ["audit", "--config", A9A, "--out", "o"], "claims no privacy guarantee"),
    (
        "audit-noise-scale-inf",
        ["audit", "--config", PRIVATE, "--noise-scale", "inf", "--out", "o"],
        "--noise-scale must be a finite number > 0, got inf",
    ),
    (
        "audit-incomplete-run-dir",
        ["audit", "full", "--out", "o"],
        "not a complete run directory: full lacks config.json",
    ),
    ("audits-none-below", ["audits", "full"], "no audit.json of an audited guarantee below it"),
    (
        "reproduce-missing-data",
        ["reproduce", "ldp", "fig2", "--out", "o", "--data-dir", "nowhere"],
        "files adult.data, adult.test not found",
    ),
]


CASES += [
    # -- vfl run: the config file
    ("run-config-missing", ["run", "--config", "nope.toml", "--out", "o"], "config file not found: nope.toml"),
    ("run-config-is-a-dir", ["run", "--config", "full", "--out", "o"], "'full' is a directory"),
    (
        "run-config-under-a-file",
        ["run", "--config", "afile/x.toml", "--out", "o"],
        "config file afile/x.toml: cannot read it (Not a directory)",
    ),
    ("run-config-malformed", ["run", "--config", "bad.toml", "--out", "o"], "bad.toml: invalid TOML"),
    ("run-config-empty", ["run", "--config", "empty.toml", "--out", "o"], "data.dataset is required"),
    ("run-config-key-twice", ["run", "--config", "twice.toml", "--out", "o"], "invalid TOML"),
    (
        "run-config-unknown-section",
        ["run", "--config", "section.toml", "--out", "o"],
        "unknown key 'bogus'; valid top-level keys",
    ),
    ("run-unknown-key", R("--set", "solver.bogus=1"), "unknown key 'solver.bogus'"),
    ("run-key-wrong-type", R("--set", 'solver.epochs="ten"'), "solver.epochs must be an integer"),
    ("run-bool-for-int", R("--set", "solver.epochs=true"), "solver.epochs must be an integer"),
    ("run-float-for-int", R("--set", "solver.epochs=2.5"), "got 2.5 (float)"),
    ("run-key-in-wrong-section", R("--set", "solver.lam=0.1"), "unknown key 'solver.lam'"),
    ("run-section-a-number", R("--set", "data=3"), "'data' must be a table ([data]), got int"),
    ("run-name-empty", R("--set", 'name=""'), "name must be a non-empty string"),
    ("run-name-slash", R("--set", 'name="a/b"'), "without '/'"),
    ("run-unknown-solver", R("--set", "solver.name=bogus"), "solver.name = 'bogus' is not one of"),
    ("run-unknown-dataset", R("--set", "data.dataset=bogus"), "unknown dataset 'bogus'"),
    ("run-unknown-loss", R("--set", "objective.loss=bogus"), "objective.loss = 'bogus' is not one of"),
    ("run-unknown-synthetic-option", R("--set", "data.options.bogus=1"), "unknown option(s) bogus"),
    ("run-unknown-preprocessing-key", R("--set", "preprocessing.bogus=1"), "unknown key 'preprocessing.bogus'"),
    (
        "run-fallback-never-used",
        ["run", "--config", "fallback.toml", "--out", "o"],
        "data.fallback applies to a dataset read from files",
    ),
    (
        "run-fallback-not-generated",
        ["run", "--config", A9A, "--set", "data.fallback=adult", "--out", "o"],
        "data.fallback = 'adult' is not generated data",
    ),
    ("run-file-key-on-generated-data", R("--set", 'data.path="x.csv"'), "unknown key 'data.path'"),
    # -- vfl run: --set
    ("run-set-without-value", R("--set", "solver.rho"), "--set expects key=value"),
    ("run-set-empty-key", R("--set", "=3"), "is not a dotted key"),
    ("run-set-bad-dots", R("--set", "solver..rho=3"), "is not a dotted key"),
    ("run-set-key-twice", R("--set", "solver.rho=1", "--set", "solver.rho=2"), "solver.rho is given twice (1 and 2"),
    ("run-set-and-option", R("--set", "solver.epochs=5", "--epochs", "3"), "solver.epochs is given twice (5 and 3"),
    ("run-set-below-a-number", R("--set", "solver.rho.x=1"), "solver.rho must be a number"),
    # -- vfl run: numbers
    ("run-lam-negative", R("--set", "objective.lam=-1"), "objective.lam must be >= 0, got -1"),
    ("run-lam-nan", R("--set", "objective.lam=nan"), "objective.lam must be finite, got nan"),
    ("run-lam-inf", R("--set", "objective.lam=inf"), "objective.lam must be finite, got inf"),
    ("run-rho-zero", R("--set", "solver.rho=0"), "solver.rho must be > 0, got 0"),
    ("run-rho-text", R("--set", "solver.rho=abc"), "solver.rho must be a number, got 'abc'"),
    ("run-sigma-negative", R("--set", "privacy.sigma=-1"), "privacy.sigma must be >= 0, got -1"),
    ("run-epochs-zero", R("--epochs", "0"), "'--epochs': 0 is not in the range x>=1"),
    ("run-epochs-negative", R("--epochs", "-1"), "'--epochs': -1 is not in the range"),
    ("run-epochs-huge", R("--epochs", "1000000000"), "solver.epochs must be <= 1000000"),
    ("run-epochs-float", R("--epochs", "1.5"), "'1.5' is not a valid integer"),
    ("run-epochs-exponent", R("--epochs", "1e9"), "'1e9' is not a valid integer"),
    ("run-epochs-nan", R("--epochs", "nan"), "'nan' is not a valid integer"),
    ("run-seed-negative", R("--seed", "-1"), "'--seed': -1 is not in the range x>=0"),
    ("run-repeats-zero", R("--repeats", "0"), "'--repeats': 0 is not in the range x>=1"),
    ("run-repeats-option-huge", R("--repeats", "1000000000"), "run.repeats must be <= 10000"),
    ("run-eval-every-zero", R("--eval-every", "0"), "'--eval-every': 0 is not in the range"),
    ("run-baselines-unknown", R("--baselines", "bogus"), "'bogus' is not one of 'all', 'central'"),
    ("run-party-wait-negative", R("--set", "run.party_wait=-1"), "run.party_wait must be in [0, 86400]"),
    ("run-backend-unknown", R("--set", "run.backend=bogus"), "run.backend = 'bogus' is not one of"),
    ("run-sweep-sigma-negative", R("--set", "sweep.sigmas=[-1]"), "sweep.sigmas[0] must be >= 0"),
    ("run-sweep-seed-twice", R("--set", "sweep.seeds=[1, 1]"), "sweep.seeds lists a seed twice"),
    ("run-synthetic-size-negative", R("--set", "data.options.n_train=-5"), "n_train must be an integer >= 1, got -5"),
    # -- vfl run: paths
    (
        "run-out-exists",
        ["run", "--config", "small.toml", "--out", "full"],
        "already exists (use --overwrite to replace it)",
    ),
    ("run-out-is-a-file", ["run", "--config", "small.toml", "--out", "afile"], "'afile' is a file"),
    ("run-out-under-a-file", ["run", "--config", "small.toml", "--out", "afile/o"], "afile is a file, not a directory"),
    ("run-data-dir-is-a-file", R("--data-dir", "afile"), "'afile' is a file"),
    (
        "run-data-dir-missing",
        ["run", "--config", A9A, "--out", "o", "--data-dir", "nowhere"],
        "files a9a, a9a.t not found",
    ),
    # -- vfl run: flags that would have no effect
    ("run-stop-at-budget-without-budget", R("--stop-at-budget"), "--stop-at-budget needs privacy.budget_epsilon"),
    ("run-release-only-claims-nothing", R("--release-only"), "--release-only applies to a run that claims"),
    ("run-cluster-in-process", R("--cluster", "tcp://127.0.0.1:9"), "--cluster needs run.backend"),
    (
        "run-no-cache-without-baselines",
        R("--no-cache", "--baselines", "none"),
        "--no-cache has no effect with run.baselines = 'none'",
    ),
    # -- vfl run: impossible partitions and graphs
    (
        "run-more-columns-than-features",
        R("--set", "partition.columns=[50, 50]"),
        "partition.columns [50, 50] sum to 100 but the dataset has 6 features",
    ),
    ("run-party-without-columns", R("--set", "partition.columns=[0, 6]"), "party 1 has 0 columns"),
    ("run-party-negative-columns", R("--set", "partition.columns=[-1, 7]"), "party 1 has -1 columns"),
    (
        "run-partition-two-ways",
        R("--set", "partition.ranges=[[0, 3], [3, 6]]"),
        "partition needs exactly one of columns, ranges, indices",
    ),
    ("run-partition-empty", R("--set", "partition.columns=[]"), "partition.columns must be a non-empty list"),
    (
        "run-graph-too-many-edges",
        ["run", "--config", LDP, "--set", "network.edges=100", "--out", "o"],
        "network.edges = 100: a graph on 10 nodes has at most 45 edges",
    ),
    (
        "run-graph-disconnected",
        ["run", "--config", LDP, "--set", "network.edges=3", "--out", "o"],
        "a connected graph on 10 nodes needs at least 9 edges",
    ),
    (
        "run-graph-one-node",
        ["run", "--config", LDP, "--set", "network.nodes=1", "--out", "o"],
        "network.nodes must be >= 2, got 1",
    ),
    (
        "run-graph-key-of-another-graph",
        ["run", "--config", LDP, "--set", "network.p=0.5", "--out", "o"],
        "network.p does not apply to graph = 'gnm'",
    ),
    (
        "run-ldp-rate-negative",
        ["run", "--config", LDP, "--set", "privacy.beta0=-1", "--out", "o"],
        "privacy.beta0 must be > 0, got -1",
    ),
    (
        "run-no-providers",
        ["run", "--config", DP_ADMM, "--set", "partition.agents=0", "--out", "o"],
        "partition.agents must be >= 1, got 0",
    ),
    # -- vfl run: privacy parameters
    (
        "run-epsilon-zero",
        ["run", "--config", HU_PRIVATE, "--set", "privacy.epsilon=0", "--out", "o"],
        "privacy.epsilon must be > 0, got 0",
    ),
    (
        "run-epsilon-negative",
        ["run", "--config", HU_PRIVATE, "--set", "privacy.epsilon=-1", "--out", "o"],
        "privacy.epsilon must be > 0, got -1",
    ),
    (
        "run-epsilon-nan",
        ["run", "--config", HU_PRIVATE, "--set", "privacy.epsilon=nan", "--out", "o"],
        "privacy.epsilon must be finite, got nan",
    ),
    (
        "run-epsilon-inf",
        ["run", "--config", HU_PRIVATE, "--set", "privacy.epsilon=inf", "--out", "o"],
        "privacy.epsilon must be finite, got inf",
    ),
    (
        "run-delta-zero",
        ["run", "--config", HU_PRIVATE, "--set", "privacy.delta=0", "--out", "o"],
        "privacy.delta must be in (0, 1), got 0",
    ),
    (
        "run-delta-one",
        ["run", "--config", HU_PRIVATE, "--set", "privacy.delta=1", "--out", "o"],
        "privacy.delta must be in (0, 1), got 1",
    ),
    (
        "run-delta-negative",
        ["run", "--config", DP_ADMM, "--set", "privacy.delta=-1e-5", "--out", "o"],
        "privacy.delta must be in (0, 1), got -1e-05",
    ),
    (
        "run-budget-negative",
        ["run", "--config", HU_PRIVATE, "--set", "privacy.budget_epsilon=-1", "--out", "o"],
        "privacy.budget_epsilon must be > 0, got -1",
    ),
    # -- vfl run: the user's own data file
    ("own-empty-file", ["run", "--config", "own-empty.toml", "--out", "o"], "own-empty.csv: empty file (0 bytes)"),
    (
        "own-header-only",
        ["run", "--config", "own-header.toml", "--out", "o"],
        "empty file (a header line but no data rows)",
    ),
    (
        "own-short-row",
        ["run", "--config", "own-ragged.toml", "--out", "o"],
        "line 22: a short row: 2 fields where the header has 4",
    ),
    (
        "own-list-leaves-a-value-out",
        ["run", "--config", "own-list.toml", "--out", "o"],
        "partition.columns [3, 3] sum to 6 but the dataset has 4 features (one-hot columns: 'b' 2 "
        "from preprocessing.categories.b; a value left out of a list has no column of its own)",
    ),
    (
        "own-long-row",
        ["run", "--config", "own-ragged-long.toml", "--out", "o"],
        "malformed CSV file (Error tokenizing data. C error: Expected 4 fields in line 22, saw 5)",
    ),
    ("own-text-cell", ["run", "--config", "own-text.toml", "--out", "o"], "line 5, column 'b': non-numeric value 'x'"),
    ("own-nan-cell", ["run", "--config", "own-nan.toml", "--out", "o"], "value 'nan' is not finite"),
    ("own-inf-cell", ["run", "--config", "own-inf.toml", "--out", "o"], "value 'inf' is not finite"),
    ("own-empty-cell", ["run", "--config", "own-gap.toml", "--out", "o"], "line 5, column 'b': missing value"),
    (
        "own-three-labels",
        ["run", "--config", "own-three.toml", "--out", "o"],
        "3 distinct labels (0, 1, 7); binary classification needs exactly two",
    ),
    ("own-one-label", ["run", "--config", "own-const.toml", "--out", "o"], "constant label"),
    ("own-no-label-key", ["run", "--config", "own-no-label.toml", "--out", "o"], "option label"),
    (
        "own-label-not-a-column",
        ["run", "--config", "own-label-missing.toml", "--out", "o"],
        "label column 'zz' not found",
    ),
    (
        "own-more-parties-than-columns",
        ["run", "--config", "own-parties.toml", "--out", "o"],
        "partition.columns [2, 2] sum to 4 but the dataset has 3 features",
    ),
    (
        "own-test-fraction-one",
        ["run", "--config", "own-good.toml", "--set", "data.test_fraction=1.0", "--out", "o"],
        "test_fraction must be a number in (0, 1), got 1.0",
    ),
    (
        "own-test-path-and-fraction",
        ["run", "--config", "own-good.toml", "--set", 'data.test_path="x.csv"', "--out", "o"],
        "give test_path or test_fraction, not both",
    ),
    (
        "own-libsvm-key-on-csv",
        ["run", "--config", "own-good.toml", "--set", "data.zero_based=true", "--out", "o"],
        "unknown option(s) zero_based",
    ),
    (
        "own-delimiter-two-chars",
        ["run", "--config", "own-good.toml", "--set", 'data.delimiter="ab"', "--out", "o"],
        "delimiter must be one character",
    ),
    (
        "own-fallback-never-used",
        ["run", "--config", "own-good.toml", "--set", 'data.fallback="synthetic"', "--out", "o"],
        "data.fallback applies to a dataset read from files",
    ),
    # -- vfl plot
    ("plot-run-missing", ["plot", "nope", "--out", "f.png"], "not a run directory: nope"),
    ("plot-run-is-a-file", ["plot", "afile", "--out", "f.png"], "not a run directory: afile"),
    ("plot-not-a-run", ["plot", "full", "--out", "f.png"], "not a complete run directory: full lacks config.json"),
    ("plot-no-manifest", ["plot", "run-no-manifest", "--out", "f.png"], "lacks manifest.json"),
    ("plot-corrupt-json", ["plot", "run-bad-json", "--out", "f.png"], "damaged run file"),
    (
        "plot-manifest-a-list",
        ["plot", "run-manifest-list", "--out", "f.png"],
        "manifest.json: damaged run file (a JSON object expected, got list)",
    ),
    ("plot-baselines-a-list", ["plot", "run-baselines-list", "--out", "f.png"], "baselines.json: damaged run file"),
    ("plot-metrics-empty", ["plot", "run-metrics-empty", "--out", "f.png"], "metrics.csv is empty"),
    (
        "plot-metrics-header-only",
        ["plot", "run-metrics-header", "--out", "f.png"],
        "metrics.csv has a header but no rows",
    ),
    ("plot-metrics-truncated", ["plot", "run-metrics-cut", "--out", "f.png"], "metrics.csv is truncated"),
    ("plot-metrics-text", ["plot", "run-metrics-text", "--out", "f.png"], "column 'objective' holds text"),
    ("plot-metrics-no-epoch", ["plot", "run-no-epoch", "--out", "f.png"], "has no 'epoch' column"),
    ("plot-out-no-extension", ["plot", "run", "--out", "f"], "has no extension; use one of"),
    ("plot-out-unknown-format", ["plot", "run", "--out", "f.xyz"], ".xyz is not a supported format"),
    ("plot-out-is-a-dir", ["plot", "run", "--out", "full"], "'full' is a directory"),
    ("plot-out-under-a-file", ["plot", "run", "--out", "afile/f.png"], "afile is a file, not a directory"),
    ("plot-out-exists", ["plot", "run", "--out", "e.png"], "already exists (use --overwrite to replace it)"),
    (
        "plot-labels-miscounted",
        ["plot", "run", "--out", "f.png", "--label", "a", "--label", "b"],
        "--label was given 2 times for 1 runs",
    ),
    (
        "plot-metrics-one-column",
        ["plot", "run", "--out", "f.png", "--metrics", "objective"],
        "--metrics expects two column names",
    ),
    (
        "plot-metrics-unknown-column",
        ["plot", "run", "--out", "f.png", "--metrics", "bogus,objective"],
        "has no column 'bogus'",
    ),
    ("plot-x-unknown", ["plot", "run", "--out", "f.png", "--x", "bogus"], "'bogus' is not one of 'epoch'"),
    (
        "plot-suboptimality-and-metrics",
        ["plot", "run", "--out", "f.png", "--suboptimality", "--metrics", "objective,test_logloss"],
        "--suboptimality has no effect with --metrics",
    ),
    (
        "plot-suboptimality-without-optimum",
        ["plot", "run-none", "--out", "f.png", "--suboptimality"],
        "--suboptimality needs F*",
    ),
    (
        "plot-log-on-suboptimality",
        ["plot", "run", "--out", "f.png", "--log", "--suboptimality"],
        "--log applies to an objective panel; the left panel is suboptimality",
    ),
    (
        "plot-log-on-another-metric",
        ["plot", "run", "--out", "f.png", "--log", "--metrics", "test_logloss,objective"],
        "the left panel is test_logloss",
    ),
    ("plot-no-run", ["plot"], "Missing argument 'RUN_DIRS...'"),
    # -- vfl privacy
    ("privacy-neither", ["privacy"], "give exactly one of --sigma and --epsilon"),
    ("privacy-both", P("--epsilon", "1"), "give exactly one of --sigma and --epsilon"),
    ("privacy-no-delta", ["privacy", "--sigma", "1", "--epochs", "10"], "--epochs and --delta are required"),
    (
        "privacy-sigma-negative",
        ["privacy", "--sigma", "-1", "--epochs", "10", "--delta", "1e-5"],
        "--sigma must be > 0, got -1",
    ),
    (
        "privacy-sigma-nan",
        ["privacy", "--sigma", "nan", "--epochs", "10", "--delta", "1e-5"],
        "--sigma must be a finite number, got nan",
    ),
    (
        "privacy-sigma-text",
        ["privacy", "--sigma", "abc", "--epochs", "10", "--delta", "1e-5"],
        "'abc' is not a valid float",
    ),
    (
        "privacy-sigma-tiny",
        ["privacy", "--sigma", "1e-300", "--epochs", "10", "--delta", "1e-5"],
        "--sigma / --sensitivity = 1e-300: the noise multiplier must be in",
    ),
    (
        "privacy-sigma-huge",
        ["privacy", "--sigma", "1e300", "--epochs", "10", "--delta", "1e-5"],
        "the noise multiplier must be in",
    ),
    (
        "privacy-epsilon-zero",
        ["privacy", "--epsilon", "0", "--epochs", "10", "--delta", "1e-5"],
        "--epsilon must be > 0, got 0",
    ),
    (
        "privacy-epsilon-inf",
        ["privacy", "--epsilon", "inf", "--epochs", "10", "--delta", "1e-5"],
        "--epsilon must be a finite number, got inf",
    ),
    (
        "privacy-delta-zero",
        ["privacy", "--sigma", "1", "--epochs", "10", "--delta", "0"],
        "--delta must be in (0, 1), got 0",
    ),
    (
        "privacy-delta-one",
        ["privacy", "--sigma", "1", "--epochs", "10", "--delta", "1"],
        "--delta must be in (0, 1), got 1",
    ),
    (
        "privacy-delta-nan",
        ["privacy", "--sigma", "1", "--epochs", "10", "--delta", "nan"],
        "--delta must be in (0, 1), got nan",
    ),
    ("privacy-sensitivity-zero", P("--sensitivity", "0"), "--sensitivity must be > 0, got 0"),
    ("privacy-sensitivity-inf", P("--sensitivity", "inf"), "--sensitivity must be a finite number"),
    (
        "privacy-epochs-zero",
        ["privacy", "--sigma", "1", "--epochs", "0", "--delta", "1e-5"],
        "'--epochs': 0 is not in the range 1<=x<=1000000",
    ),
    (
        "privacy-epochs-huge",
        ["privacy", "--sigma", "1", "--epochs", "1000000000", "--delta", "1e-5"],
        "1000000000 is not in the range 1<=x<=1000000",
    ),
    (
        "privacy-epochs-float",
        ["privacy", "--sigma", "1", "--epochs", "2.5", "--delta", "1e-5"],
        "'2.5' is not a valid integer",
    ),
    ("privacy-run-missing", ["privacy", "--run", "nope"], "not a run directory: nope"),
    ("privacy-run-is-a-file", ["privacy", "--run", "afile"], "'afile' is a file"),
    ("privacy-run-claims-nothing", ["privacy", "--run", "run", "--out", "p.png"], "run accounts no privacy"),
    (
        "privacy-run-damaged-manifest",
        ["privacy", "--run", "run-privacy-scalar", "--out", "p.png"],
        "manifest.json: damaged run file, or one from another vfl version (privacy: input should be a valid dictionary",
    ),
    ("privacy-run-out-unknown-format", ["privacy", "--run", "run", "--out", "p.xyz"], ".xyz is not a supported format"),
    (
        "privacy-run-out-exists",
        ["privacy", "--run", "run", "--out", "e.png"],
        "already exists (use --overwrite to replace it)",
    ),
    ("privacy-run-and-sigma", ["privacy", "--run", "run", "--sigma", "1"], "--sigma has no effect with --run"),
    (
        "privacy-run-and-sensitivity",
        ["privacy", "--run", "run", "--sensitivity", "2"],
        "--sensitivity has no effect with --run",
    ),
    ("privacy-out-without-run", P("--out", "p.png"), "--out and --overwrite apply to --run"),
    ("privacy-overwrite-without-run", P("--overwrite"), "--out and --overwrite apply to --run"),
    # -- vfl audit
    ("audit-neither", ["audit"], "give a RUN_DIR or --config (one of them)"),
    ("audit-both", ["audit", "run", "--config", "priv.toml"], "give a RUN_DIR or --config (one of them)"),
    ("audit-runs-few", A("--runs", "5"), "'--runs': 5 is not in the range x>=10"),
    ("audit-runs-huge", A("--runs", "1000000000"), "--runs must be in [10, 1000000], got 1000000000"),
    ("audit-confidence-low", A("--confidence", "0.3"), "0.3 is not in the range 0.5<=x<1.0"),
    ("audit-confidence-one", A("--confidence", "1"), "1.0 is not in the range 0.5<=x<1.0"),
    ("audit-confidence-nan", A("--confidence", "nan"), "--confidence must be in [0.5, 1), got nan"),
    ("audit-kinds-unknown", A("--kinds", "bogus"), "'bogus' is not one of 'natural'"),
    ("audit-bound-unknown", A("--bound", "bogus"), "'bogus' is not one of 'auto'"),
    ("audit-sampler-unknown", A("--sampler", "bogus"), "'bogus' is not one of 'numpy'"),
    ("audit-batch-one", A("--batch", "1"), "'--batch': 1 is not in the range x>=2"),
    ("audit-batch-too-big", A("--batch", "1000000000000"), "more than the"),
    ("audit-seed-negative", A("--seed", "-1"), "'--seed': -1 is not in the range x>=0"),
    ("audit-noise-scale-negative", A("--noise-scale", "-1"), "--noise-scale must be a finite number > 0"),
    ("audit-noise-scale-text", A("--noise-scale", "abc"), "'abc' is not a valid float"),
    ("audit-config-missing", ["audit", "--config", "nope.toml", "--out", "o"], "config file not found"),
    ("audit-config-under-a-file", ["audit", "--config", "afile/c.toml", "--out", "o"], "cannot read it"),
    ("audit-run-missing", ["audit", "nope", "--out", "o"], "not a run directory: nope"),
    ("audit-run-claims-nothing", ["audit", "run", "--out", "o"], "the run claims no privacy guarantee"),
    (
        "audit-run-config-a-list",
        ["audit", "run-config-list", "--out", "o"],
        "config.json: damaged run file (a JSON object expected, got list)",
    ),
    ("audit-run-config-unknown-key", ["audit", "run-config-unknown", "--out", "o"], "unknown key 'bogus'"),
    (
        "audit-run-set-unknown-key",
        ["audit", "run", "--set", "solver.bogus=1", "--out", "o"],
        "unknown key 'solver.bogus'",
    ),
    ("audit-set-key-twice", A("--set", "solver.rho=1", "--set", "solver.rho=2"), "solver.rho is given twice"),
    ("audit-out-is-a-file", ["audit", "--config", "priv.toml", "--out", "afile"], "'afile' is a file"),
    ("audit-data-dir-is-a-file", A("--data-dir", "afile"), "'afile' is a file"),
    ("audit-epsilon-zero", A("--set", "privacy.epsilon=0"), "privacy.epsilon must be > 0, got 0"),
    # -- vfl audits
    ("audits-root-missing", ["audits", "nope"], "Directory 'nope' does not exist"),
    ("audits-root-is-a-file", ["audits", "afile"], "'afile' is a file"),
    ("audits-default-root-missing", ["audits"], "Directory 'results/audits' does not exist"),
    ("audits-corrupt-audit", ["audits", "audits"], "audits/x/audit.json: not a readable audit"),
    ("audits-out-unknown-format", ["audits", "full", "--out", "t.xyz"], ".xyz is not a supported format"),
    ("audits-out-under-a-file", ["audits", "full", "--out", "afile/t.png"], "afile is a file, not a directory"),
    # -- vfl sweep
    ("sweep-config-missing", ["sweep", "--config", "nope.toml", "--grid", "solver.rho=1"], "config file not found"),
    ("sweep-config-under-a-file", ["sweep", "--config", "afile/c.toml", "--grid", "solver.rho=1"], "cannot read it"),
    ("sweep-no-grid", ["sweep", "--config", "small.toml", "--out", "o"], "a sweep needs at least one --grid"),
    (
        "sweep-grid-without-values",
        ["sweep", "--config", "small.toml", "--out", "o", "--grid", "solver.rho="],
        "--grid solver.rho has no values",
    ),
    (
        "sweep-grid-without-equals",
        ["sweep", "--config", "small.toml", "--out", "o", "--grid", "solver.rho"],
        "--grid expects KEY=V1,V2,...",
    ),
    (
        "sweep-grid-not-a-key",
        ["sweep", "--config", "small.toml", "--out", "o", "--grid", "Rho=1,2"],
        "--grid key 'Rho' is not a dotted config key",
    ),
    (
        "sweep-grid-unknown-key",
        ["sweep", "--config", "small.toml", "--out", "o", "--grid", "solver.bogus=1"],
        "unknown key 'solver.bogus'",
    ),
    (
        "sweep-grid-bad-value",
        ["sweep", "--config", "small.toml", "--out", "o", "--grid", "solver.rho=-1,2"],
        "grid point {'rho': -1}: solver.rho must be > 0",
    ),
    (
        "sweep-grid-nan",
        ["sweep", "--config", "small.toml", "--out", "o", "--grid", "solver.rho=nan"],
        "solver.rho must be finite, got nan",
    ),
    (
        "sweep-grid-seeds",
        ["sweep", "--config", "small.toml", "--out", "o", "--grid", "run.seed=1,2"],
        "sweep seeds with --seeds",
    ),
    ("sweep-grid-and-set", S("--set", "solver.rho=3"), "--grid solver.rho also has a fixed value"),
    (
        "sweep-grid-and-option",
        ["sweep", "--config", "small.toml", "--out", "o", "--grid", "solver.epochs=2,3", "--epochs", "4"],
        "--grid solver.epochs also has a fixed value",
    ),
    ("sweep-set-key-twice", S("--set", "objective.lam=1", "--set", "objective.lam=2"), "objective.lam is given twice"),
    (
        "sweep-too-many-runs",
        S(
            "--grid",
            "objective.lam=" + ",".join(str(i) for i in range(100)),
            "--seeds",
            ",".join(str(i) for i in range(100)),
        ),
        "the sweep has 20000 runs (grid points x seeds); at most 10000",
    ),
    ("sweep-seeds-text", S("--seeds", "a,b"), "expects comma-separated integers, got 'a,b'"),
    ("sweep-seeds-negative", S("--seeds", "-1"), "--seeds[0] must be >= 0, got -1"),
    ("sweep-seeds-twice", S("--seeds", "1,1"), "--seeds lists a seed twice"),
    ("sweep-seeds-empty", S("--seeds", ","), "expects at least one value"),
    ("sweep-seeds-float", S("--seeds", "1.5"), "expects comma-separated integers, got '1.5'"),
    ("sweep-jobs-zero", S("--jobs", "0"), "'--jobs': 0 is not in the range 1<=x<=256"),
    ("sweep-jobs-huge", S("--jobs", "1000000000"), "1000000000 is not in the range 1<=x<=256"),
    (
        "sweep-jobs-with-scheduler",
        S("--jobs", "3", "--scheduler", "tcp://127.0.0.1:9"),
        "--jobs 3 has no effect with --scheduler",
    ),
    (
        "sweep-scheduler-not-an-address",
        S("--scheduler", "notanaddress"),
        "--scheduler 'notanaddress' is not a Dask scheduler address",
    ),
    ("sweep-epochs-zero", S("--epochs", "0"), "'--epochs': 0 is not in the range x>=1"),
    (
        "sweep-out-is-a-file",
        ["sweep", "--config", "small.toml", "--out", "afile", "--grid", "solver.rho=1"],
        "'afile' is a file",
    ),
    (
        "sweep-out-under-a-file",
        ["sweep", "--config", "small.toml", "--out", "afile/o", "--grid", "solver.rho=1"],
        "afile is a file, not a directory",
    ),
    (
        "sweep-out-not-a-sweep",
        ["sweep", "--config", "small.toml", "--out", "full", "--grid", "solver.rho=1"],
        "is not empty and holds no sweep (no baselines.json)",
    ),
    (
        "sweep-data-dir-missing",
        ["sweep", "--config", A9A, "--out", "o", "--data-dir", "nowhere", "--grid", "solver.rho=1"],
        "files a9a, a9a.t not found",
    ),
    # -- vfl sweep-noise
    ("noise-both-lists", N("--sigmas", "0,1", "--epsilons", "1"), "give --sigmas or --epsilons, not both"),
    ("noise-sigma-negative", N("--sigmas", "-1,1"), "--sigmas[0] must be >= 0, got -1"),
    ("noise-sigma-nan", N("--sigmas", "nan"), "--sigmas[0] must be finite, got nan"),
    ("noise-sigma-inf", N("--sigmas", "inf"), "--sigmas[0] must be finite, got inf"),
    ("noise-sigma-text", N("--sigmas", "a"), "expects comma-separated numbers, got 'a'"),
    ("noise-sigma-twice", N("--sigmas", "1,1"), "--sigmas lists a noise level twice"),
    ("noise-nothing-to-sweep", N("--sigmas", "0"), "nothing to sweep"),
    ("noise-config-has-no-levels", N(), "nothing to sweep"),
    (
        "noise-epsilon-zero",
        ["sweep-noise", "--config", HU_PRIVATE, "--out", "o", "--epsilons", "0,1"],
        "--epsilons must be > 0, got 0",
    ),
    (
        "noise-epsilon-nan",
        ["sweep-noise", "--config", HU_PRIVATE, "--out", "o", "--epsilons", "nan"],
        "--epsilons[0] must be finite, got nan",
    ),
    ("noise-epsilons-without-accounting", N("--epsilons", "1,2"), "an epsilon sweep needs accounting mode"),
    (
        "noise-sigma-and-set",
        N("--sigmas", "0,1", "--set", "privacy.sigma=3"),
        "--grid privacy.sigma also has a fixed value",
    ),
    (
        "noise-sigma-of-a-solver-without-one",
        ["sweep-noise", "--config", LDP, "--out", "o", "--sigmas", "0,1"],
        "unknown key 'privacy.sigma'",
    ),
    ("noise-seeds-twice", N("--sigmas", "0,1", "--seeds", "0,0"), "--seeds lists a seed twice"),
    ("noise-jobs-zero", N("--sigmas", "0,1", "--jobs", "0"), "'--jobs': 0 is not in the range"),
    (
        "noise-scheduler-not-an-address",
        N("--sigmas", "0,1", "--scheduler", "x"),
        "--scheduler 'x' is not a Dask scheduler address",
    ),
    (
        "noise-jobs-with-scheduler",
        N("--sigmas", "0,1", "--jobs", "3", "--scheduler", "tcp://127.0.0.1:9"),
        "--jobs 3 has no effect with --scheduler",
    ),
    (
        "noise-out-is-a-file",
        ["sweep-noise", "--config", "small.toml", "--out", "afile", "--sigmas", "0,1"],
        "'afile' is a file",
    ),
    ("noise-config-missing", ["sweep-noise", "--config", "nope.toml", "--sigmas", "0,1"], "config file not found"),
    ("noise-epochs-zero", N("--sigmas", "0,1", "--epochs", "0"), "'--epochs': 0 is not in the range"),
    ("noise-data-dir-is-a-file", N("--sigmas", "0,1", "--data-dir", "afile"), "'afile' is a file"),
    # -- vfl reproduce
    ("reproduce-unknown-paper", ["reproduce", "bogus", "--out", "o"], "unknown paper or figure 'bogus'"),
    ("reproduce-unknown-figure", ["reproduce", "hu", "bogus", "--out", "o"], "hu has no figure 'bogus'"),
    ("reproduce-all-with-a-figure", ["reproduce", "all", "fig1", "--out", "o"], "`vfl reproduce all` takes no figure"),
    (
        "reproduce-configs-missing",
        ["reproduce", "hu", "fig1", "--configs", "nowhere", "--out", "o"],
        "--configs nowhere is not a directory",
    ),
    (
        "reproduce-configs-is-a-file",
        ["reproduce", "hu", "fig1", "--configs", "afile", "--out", "o"],
        "'afile' is a file",
    ),
    (
        "reproduce-configs-lack-one",
        ["reproduce", "hu", "fig1", "--configs", "full", "--out", "o"],
        "config full/fig1-a9a-admm.toml not found",
    ),
    ("reproduce-out-is-a-file", ["reproduce", "hu", "fig1", "--out", "afile"], "'afile' is a file"),
    ("reproduce-out-under-a-file", ["reproduce", "hu", "fig1", "--out", "afile/o"], "afile is a file, not a directory"),
    ("reproduce-jobs-zero", ["reproduce", "hu", "fig1", "--jobs", "0", "--out", "o"], "'--jobs': 0 is not"),
    (
        "reproduce-jobs-huge",
        ["reproduce", "hu", "fig1", "--jobs", "1000000000", "--out", "o"],
        "1000000000 is not in the range 1<=x<=256",
    ),
    (
        "reproduce-data-dir-is-a-file",
        ["reproduce", "hu", "fig1", "--data-dir", "afile", "--out", "o"],
        "'afile' is a file",
    ),
    ("reproduce-extra-argument", ["reproduce", "hu", "fig1", "extra"], "unexpected extra argument (extra)"),
    # -- vfl references
    ("references-unknown-case", ["references", "bogus"], "unknown reference case(s) bogus"),
    ("references-update-unknown-case", ["references", "--update", "bogus"], "unknown reference case(s) bogus"),
    ("references-root-missing", ["references", "--root", "nowhere"], "no reference CSV for a9a-admm"),
    (
        "references-root-without-csv",
        ["references", "a9a-admm", "--root", "full"],
        "no reference CSV for a9a-admm in full",
    ),
    ("references-root-is-a-file", ["references", "--root", "afile"], "'afile' is a file"),
    ("references-repo-is-a-file", ["references", "--repo", "afile"], "'afile' is a file"),
    ("references-data-dir-is-a-file", ["references", "--data-dir", "afile"], "'afile' is a file"),
    # -- vfl solvers, and vfl itself
    ("solvers-unknown", ["solvers", "bogus"], "solver.name = 'bogus' is not one of"),
    ("solvers-extra-argument", ["solvers", "dgd", "extra"], "unexpected extra argument (extra)"),
    ("solvers-unknown-option", ["solvers", "--bogus"], "No such option '--bogus'"),
    # -- vfl datasets
    ("datasets-unknown-subcommand", ["datasets", "bogus"], "No such command 'bogus'"),
    ("datasets-list-data-dir-is-a-file", ["datasets", "list", "--data-dir", "afile"], "'afile' is a file"),
    ("datasets-list-extra-argument", ["datasets", "list", "extra"], "unexpected extra argument (extra)"),
    ("datasets-fetch-unknown", ["datasets", "fetch", "bogus", "--data-dir", "dd"], "unknown dataset 'bogus'"),
    (
        "datasets-fetch-generated",
        ["datasets", "fetch", "synthetic", "--data-dir", "dd"],
        "dataset 'synthetic' is generated on the fly and has no files",
    ),
    ("datasets-fetch-data-dir-is-a-file", ["datasets", "fetch", "a9a", "--data-dir", "afile"], "'afile' is a file"),
    (
        "datasets-fetch-ftp-mirror",
        ["datasets", "fetch", "a9a", "--data-dir", "dd", "--mirror", "ftp://x/"],
        "--mirror 'ftp://x/' is not a URL",
    ),
    ("datasets-verify-unknown", ["datasets", "verify", "bogus"], "unknown dataset 'bogus'"),
    ("datasets-verify-missing", ["datasets", "verify", "a9a", "--data-dir", "nowhere"], "2 file(s) missing from"),
    ("datasets-verify-mismatch", ["datasets", "verify", "a9a", "--data-dir", "dd"], "failed verification: a9a"),
    ("datasets-verify-data-dir-is-a-file", ["datasets", "verify", "--data-dir", "afile"], "'afile' is a file"),
    ("inspect-missing", I("nope.csv"), "nope.csv: no such file"),
    ("inspect-a-dir", I("full"), "'full' is a directory"),
    ("inspect-empty", I("empty.csv"), "empty.csv: empty file (0 bytes)"),
    ("inspect-header-only", I("header.csv", "--label", "y"), "empty file (a header line but no data rows)"),
    ("inspect-ragged", I("ragged.csv", "--label", "y"), "malformed CSV file"),
    ("inspect-text-cell", I("text.csv", "--label", "y"), "non-numeric value 'x'"),
    ("inspect-nan-cell", I("nan.csv", "--label", "y"), "value 'nan' is not finite"),
    ("inspect-inf-cell", I("inf.csv", "--label", "y"), "value 'inf' is not finite"),
    ("inspect-three-labels", I("three.csv", "--label", "y"), "3 distinct labels"),
    ("inspect-one-label", I("const.csv", "--label", "y"), "constant label"),
    ("inspect-label-not-a-column", I("data.csv", "--label", "zz"), "label column 'zz' not found"),
    ("inspect-no-label", I("data.csv"), "a CSV file needs --label COLUMN"),
    ("inspect-parties-zero", I("data.csv", "--label", "y", "--parties", "0"), "'--parties': 0 is not in the range"),
    (
        "inspect-more-parties-than-columns",
        I("data.csv", "--label", "y", "--parties", "5"),
        "cannot split 3 column(s) among 5 parties",
    ),
    ("inspect-format-unknown", I("data.csv", "--format", "bogus"), "'bogus' is not one of 'libsvm', 'csv'"),
    ("inspect-label-of-libsvm", I("data.libsvm", "--label", "y"), "--label applies to CSV files"),
    ("inspect-libsvm-text", I("text.libsvm"), "malformed LIBSVM file"),
    ("inspect-libsvm-nan", I("nan.libsvm"), "feature 1 has value nan"),
    ("inspect-csv-read-as-libsvm", I("data.csv", "--format", "libsvm"), "malformed LIBSVM file"),
    # vfl datasets split: a file or a config's data as party files
    (
        "split-file-and-config",
        ["datasets", "split", "data.csv", "--config", A9A, "--out", "o"],
        "give a FILE to split or --config CONFIG, one of them",
    ),
    ("split-no-label", ["datasets", "split", "data.csv", "--out", "o"], "needs --label COLUMN"),
    (
        "split-label-of-libsvm",
        ["datasets", "split", "data.libsvm", "--label", "y", "--out", "o"],
        "--label applies to CSV files",
    ),
    (
        "split-label-not-a-column",
        ["datasets", "split", "data.csv", "--label", "zz", "--out", "o"],
        "label column 'zz' not found",
    ),
    (
        "split-parties-one",
        ["datasets", "split", "data.csv", "--label", "y", "--parties", "1", "--out", "o"],
        "'--parties': 1 is not in the range",
    ),
    (
        "split-more-parties-than-columns",
        ["datasets", "split", "data.csv", "--label", "y", "--parties", "4", "--out", "o"],
        "cannot split 3 column(s) among 4 parties",
    ),
    (
        "split-overlap-zero",
        ["datasets", "split", "data.csv", "--label", "y", "--overlap", "0", "--out", "o"],
        "'--overlap': 0.0 is not in the range",
    ),
    (
        "split-seed-negative",
        ["datasets", "split", "data.csv", "--label", "y", "--seed", "-1", "--out", "o"],
        "'--seed': -1 is not in the range",
    ),
    (
        "split-test-missing",
        ["datasets", "split", "data.csv", "--label", "y", "--test", "nope.csv", "--out", "o"],
        "nope.csv: no such file",
    ),
    (
        "split-test-with-config",
        ["datasets", "split", "--config", "small.toml", "--test", "data.csv", "--out", "o"],
        "--label, --test and --parties describe",
    ),
    (
        "split-set-without-config",
        ["datasets", "split", "data.csv", "--label", "y", "--set", "run.seed=1", "--out", "o"],
        "--set applies with --config",
    ),
    (
        "split-set-bad-key",
        ["datasets", "split", "--config", "small.toml", "--set", "solver.x=1", "--out", "o"],
        "unknown key 'solver.x'",
    ),
    (
        "split-out-exists",
        ["datasets", "split", "data.csv", "--label", "y", "--out", "full"],
        "full exists; pass --overwrite",
    ),
    ("split-horizontal-config", ["datasets", "split", "--config", DP_ADMM, "--out", "o"], "party files hold columns"),
    (
        "split-data-dir-is-a-file",
        ["datasets", "split", "--config", A9A, "--data-dir", "afile", "--out", "o"],
        "'afile' is a file",
    ),
    # vfl tune
    (
        "tune-no-public-rows",
        ["tune", "--config", "small.toml", "--grid", "solver.rho=1,2", "--out", "t.toml"],
        "set partition.public",
    ),
    (
        "tune-grid-bad-key",
        ["tune", "--config", "small.toml", "--grid", "solver.bogus=1", "--out", "t.toml"],
        "unknown key 'solver.bogus'",
    ),
    (
        "tune-grid-no-values",
        ["tune", "--config", "small.toml", "--grid", "solver.rho=", "--out", "t.toml"],
        "--grid solver.rho has no values",
    ),
    (
        "tune-out-not-toml",
        ["tune", "--config", "small.toml", "--grid", "solver.rho=1", "--out", "t.txt"],
        "name it *.toml",
    ),
    (
        "tune-seeds-zero",
        ["tune", "--config", "small.toml", "--grid", "solver.rho=1", "--seeds", "0"],
        "'--seeds': 0 is not in the range",
    ),
    (
        "tune-trials-one",
        ["tune", "--config", "priv.toml", "--grid", "solver.rho=1", "--private", "--trials", "1"],
        "'--trials': 1.0 is not in the range",
    ),
    (
        "tune-private-without-guarantee",
        [
            "tune",
            "--config",
            "small.toml",
            "--set",
            "partition.public=5",
            "--grid",
            "solver.rho=1",
            "--private",
            "--out",
            "t.toml",
        ],
        "the config claims no guarantee",
    ),
    (
        "tune-data-dir-is-a-file",
        ["tune", "--config", "small.toml", "--grid", "solver.rho=1", "--data-dir", "afile"],
        "'afile' is a file",
    ),
    # vfl attack
    (
        "attack-config-missing",
        ["attack", "--config", "nope.toml", "--attack", "label-norm"],
        "config file not found: nope.toml",
    ),
    ("attack-unknown", ["attack", "--config", "small.toml", "--attack", "bogus"], "'bogus' is not one of"),
    (
        "attack-too-few-known",
        ["attack", "--config", "small.toml", "--attack", "model-completion", "--known", "3"],
        "model-completion needs at least 10 known labels",
    ),
    (
        "attack-party-one",
        ["attack", "--config", "small.toml", "--attack", "label-norm", "--party", "1"],
        "--party 1: the passive parties are 2..M",
    ),
    (
        "attack-not-defined",
        ["attack", "--config", DP_ADMM, "--attack", "label-norm"],
        "attack label-norm is not defined for dp_admm (defined: none)",
    ),
    (
        "attack-data-dir-is-a-file",
        ["attack", "--config", "small.toml", "--attack", "label-norm", "--data-dir", "afile"],
        "'afile' is a file",
    ),
    ("attack-run-dir-missing", ["attack", "nope", "--attack", "label-norm"], "nope: no such run directory"),
    (
        "attack-run-dir-and-config",
        ["attack", "nope", "--config", "small.toml", "--attack", "label-norm"],
        "or --config (run here), not both",
    ),
    (
        "run-record-received-not-vertical",
        ["run", "--config", DP_ADMM, "--record-received"],
        "--record-received: dp_admm is not a vertical solver",
    ),
    # vfl party
    ("party-serve-no-party-table", ["party", "serve", "--config", "small.toml"], "needs a [party] table"),
    (
        "party-serve-bad-index",
        ["party", "serve", "--config", "small.toml", "--set", "party.index=0"],
        "party.index must be the party's number",
    ),
    (
        "party-serve-plaintext-off-loopback",
        [
            "party",
            "serve",
            "--config",
            "small.toml",
            "--set",
            "party.index=1",
            "--set",
            "party.insecure=true",
            "--set",
            'party.listen="10.1.1.1:5"',
        ],
        "allowed on a loopback address only",
    ),
    (
        "party-serve-data-dir-is-a-file",
        ["party", "serve", "--config", "small.toml", "--data-dir", "afile"],
        "'afile' is a file",
    ),
    (
        "party-certs-no-parties",
        ["party", "certs", "--out", "o", "--parties", "0"],
        "'--parties': 0 is not in the range",
    ),
    (
        "party-certs-zero-days",
        ["party", "certs", "--out", "o", "--parties", "1", "--days", "0"],
        "'--days': 0 is not in the range",
    ),
]


def _tree(root: Path) -> list[str]:
    """Every file and directory below ``root`` (empty directories too)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("args,fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_input(args, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if args[0] == "reproduce":
        monkeypatch.setenv("VFL_DATA_DIR", str(tmp_path / "nowhere"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "afile").write_text("a file, not a directory\n")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "kept.txt").write_text("an earlier audit\n")
    for name, make in FIXTURES.items():
        if name in args[1:] or name.split("/")[0] in args[1:]:
            make(tmp_path / name)
    before = _tree(tmp_path)
    result = invoke(*args)
    assert_one_line_error(result, fragment)
    assert _tree(tmp_path) == before  # nothing left behind: no file, directory or temporary


def _options(command) -> set[str]:
    """The options of a command that take a value (flags are exercised in combinations)."""
    return {
        opt for p in command.params if not getattr(p, "is_flag", True) and p.opts[0] != "--help" for opt in p.opts[:1]
    }


def test_the_table_covers_every_command():
    from vfl.cli.datasets_cmd import datasets
    from vfl.cli.main import cli

    assert {c[1][0] for c in CASES} == set(cli.commands)
    commands = {name: cmd for name, cmd in cli.commands.items() if name != "datasets"}
    commands |= {f"datasets {name}": cmd for name, cmd in datasets.commands.items()}
    for name, command in commands.items():
        rows = [c[1] for c in CASES if " ".join(c[1][: len(name.split())]) == name]
        assert rows, f"no row for vfl {name}"
        untried = _options(command) - {a for args in rows for a in args}
        assert not untried, f"vfl {name}: no row gives {', '.join(sorted(untried))}"


def test_a_config_with_a_byte_order_mark_reads_as_without_one(tmp_path):
    """Editors on Windows may start a UTF-8 file with a BOM; the TOML is the same."""
    from vfl.experiments.config import load_config

    text = (REPO / "configs" / "a9a.toml").read_text()
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf" + text.encode())
    (tmp_path / "plain.toml").write_text(text)
    bom, plain = load_config(tmp_path / "bom.toml"), load_config(tmp_path / "plain.toml")
    assert bom.to_dict() | {"name": None} == plain.to_dict() | {"name": None}


def test_an_unreadable_config_is_one_line(tmp_path, monkeypatch):
    """As root no file is unreadable, so the OS's refusal is simulated."""
    from vfl.core.errors import ConfigError
    from vfl.experiments.config import load_config

    def refuse(self):
        raise PermissionError(13, "Permission denied")

    (tmp_path / "c.toml").write_text(SMALL)
    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(ConfigError, match=r"c.toml: cannot read it \(Permission denied\)"):
        load_config(tmp_path / "c.toml")


def test_a_rewritten_user_file_is_read_again(tmp_path, monkeypatch):
    """The in-process dataset cache knows a user file by its path and stamp: the same
    relative path naming new content (another directory, or the file rewritten) is
    read again, never served from memory."""
    from vfl.experiments.config import load_config
    from vfl.experiments.run_data import load_config_dataset

    for i, rows in enumerate((20, 30)):
        work = tmp_path / str(i)
        work.mkdir()
        FIXTURES["own-good.toml"](work / "own-good.toml")
        extra = "".join(f"{j},1,2,{j % 2}\n" for j in range(rows - 20))
        (work / "own-good.csv").write_text(CSV + extra)
        monkeypatch.chdir(work)
        raw, _ = load_config_dataset(load_config(work / "own-good.toml"))
        assert raw.y_train.size + raw.y_test.size == rows
