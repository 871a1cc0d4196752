"""Hostile input, the rows of `vfl run`: its config file, --set, numbers, paths, flags,
impossible partitions and graphs, privacy parameters, the user's own data file.
"""

from __future__ import annotations

from hostile_fixtures import A9A, DP_ADMM, HU_PRIVATE, LDP, R

RUN = [
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
]
