"""``vfl reproduce private-utility``: the privacy-utility figure of private vertical FL.

Test log loss and accuracy against the target epsilon (delta = 1e-5) for:

- private stacking (``private_stacking``, one release per passive party);
- ADMM sharing with the sound row-level accounting (``admm_sharing``,
  ``privacy.neighbours = "row"``), its epoch count chosen per epsilon;
- non-private stacking, party 1 alone, all features (reference lines).

Tuning counted. Every hyper-parameter is chosen on rows declared public and
disjoint from the private ones (``[partition] public``: rows of the test
file, taken out of the test set), so the selection costs no privacy and the
epsilon on the figure's axis is the end-to-end one: each candidate is run on
the public rows but a held-out :data:`VAL_FRACTION` of them (permutation seed
:data:`VAL_SPLIT_SEED`, :data:`VAL_SEEDS` noise draws) and scored on that
held-out part by its validation log loss; the private training rows and the
test rows are never looked at. In order: the references' l2 weight (:data:`REFERENCE_LAMS`);
party 1's ``lam1`` is the weight it chose for "party 1 alone" (its own
data); non-private stacking's ``clip`` and ``lam_local``
(:data:`NONPRIVATE_GRID`), whose ``lam_local`` is then the floor of the
private runs' rule; per epsilon, private stacking's ``clip``,
``model_noise``, ``split``, ``prior_sd`` (:data:`STACKING_GRID`) and ADMM
sharing's epoch count with a few settings of its row-level bound
(:data:`ADMM_GRID`). The chosen configuration is then run once on all training rows with
``run.repeats = 10`` noise draws, and those test numbers are what is
reported (mean and standard deviation over the 10 draws). (The alternative,
a private selection on the private rows whose epsilon is added to the total,
Liu and Talwar 2019, Papernot and Steinke 2022, costs a multiple of the
run's epsilon; public rows cost nothing.)

Outputs in ``OUT`` (``results/figures/private-utility``): ``utility.png``
/ ``.pdf``; ``utility-<dataset>.csv`` (one row per method and epsilon, with
the chosen hyper-parameters); ``utility-tuning-<dataset>.csv`` (every
validation score); runs under ``runs/`` (resumed when current) and the
validation tables under ``tuning/`` (reused when their inputs are unchanged).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from time import perf_counter

import click
import numpy as np
import pandas as pd
import scipy.sparse as sp
from joblib import Parallel, delayed

from vfl.baselines import fit_sklearn_baseline
from vfl.core.column_kinds import column_kinds
from vfl.core.errors import ConfigError, VFLError
from vfl.core.layouts import VerticalData
from vfl.core.metrics import accuracy, log_loss
from vfl.core.objective import Objective
from vfl.core.streams import Streams
from vfl.experiments.config import config_from_dict
from vfl.experiments.distribution import make_objective
from vfl.experiments.registry import get_solver
from vfl.experiments.reproduce import ensure_run, figure_config
from vfl.experiments.run_plan import plan_run
from vfl.papers import engine
from vfl.plots import save_figure

from . import DATASETS, PAPER

# the hooks its declaration names, and the figure's record
from .utility_panels import Utility, noise_draws, tuning_table, utility_panel, utility_table

__all__ = [
    "ADMM_GRID",
    "DATASETS",
    "EPSILONS",
    "NONPRIVATE_GRID",
    "REFERENCE_LAMS",
    "STACKING_GRID",
    "reproduce",
    "noise_draws",
    "tuning_table",
    "utility_panel",
    "utility_table",
    "validation_scores",
]

EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
REPEATS = 10
VAL_FRACTION = 0.2
VAL_SPLIT_SEED = 2024
VAL_SEEDS = (101, 102, 103)


def _grid(**axes) -> list[dict]:
    keys = list(axes)
    out = [{}]
    for k in keys:
        out = [{**o, k: v} for o in out for v in axes[k]]
    return out


#: private stacking: without shares (the product of experts) or with them. The
#: points a wider validation search never chose (clip 4 with shares' split
#: [0.8, 0.18, 0.02], prior_sd 1) are left out to keep the search quick.
STACKING_GRID = _grid(
    **{"privacy.clip": [1.0, 2.0, 4.0], "privacy.model_noise": [0.1, 0.3], "privacy.split": [[1.0, 0.0, 0.0]]}
) + _grid(
    **{
        "privacy.clip": [1.0, 2.0, 4.0],
        "privacy.model_noise": [0.1, 0.3],
        "privacy.split": [[0.3, 0.68, 0.02], [0.5, 0.48, 0.02]],
        "solver.prior_sd": [0.1, 0.25],
    }
)
NONPRIVATE_GRID = _grid(**{"privacy.clip": [1.0, 2.0, 4.0], "solver.lam_local": [0.1, 1.0, 10.0, 30.0]})
#: l2 weights (sum form) of the references, party 1 alone and all features
REFERENCE_LAMS = (0.01, 0.1, 1.0, 10.0)
#: ADMM sharing: the epoch count (sigma is calibrated for it), and a fair chance
#: on the settings of its row-level bound
ADMM_GRID = _grid(
    **{
        "solver.epochs": [1, 2, 3, 5, 10],
        "objective.lam": [1.0, 10.0],
        "privacy.b1": [1.0, 3.0],
        "privacy.clip": [0.5, 1.0],
        "privacy.input_clip": [2.0, 4.0],
    }
)
_PRIVATE_KEYS = ("delta", "epsilon", "model_noise")


def _toml(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def _overrides(values: dict) -> list[str]:
    return [f"{k}={_toml(v)}" for k, v in values.items()]


def _nonprivate(config):
    """The stacking config with its privacy mechanism turned off."""
    raw = config.to_dict()
    raw["privacy"] = {k: v for k, v in raw["privacy"].items() if k not in _PRIVATE_KEYS and v is not None}
    raw["privacy"]["replayable_noise"] = True
    raw.pop("sweep", None)  # an epsilon sweep needs the mechanism
    raw["name"] = config.name + "-nonprivate"
    return config_from_dict(raw)


def _kind(config) -> str:
    """Whether a method's test numbers are released (a deployable model) or diagnostic."""
    return column_kinds(get_solver(config.solver.name), ["test_logloss"], True)["test_logloss"]


# --------------------------------------------------------------- validation --
def _holdout(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(fit rows, validation rows) of the training set: one fixed permutation."""
    perm = np.random.default_rng(seed).permutation(n)
    n_val = int(round(fraction * n))
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def _public_rows(config, plan):
    """The run's public rows (blocks, labels), or a one-line error asking for them."""
    if plan.first.public is None:
        raise ConfigError(
            f"{config.name}: private-utility tunes on rows declared public; set "
            "partition.public (rows of the test part, taken out of the test set)"
        )
    blocks, y = plan.first.public
    return blocks, np.asarray(y)


def validation_scores(
    config,
    candidates: list[dict],
    *,
    data_dir=None,
    seeds=VAL_SEEDS,
    fraction: float = VAL_FRACTION,
    split_seed: int = VAL_SPLIT_SEED,
    echo=None,
) -> pd.DataFrame:
    """Validation log loss and accuracy of ``config`` with each candidate's overrides.

    The run's public rows (``partition.public``, preprocessed as the run
    preprocesses every row) are split once: ``fraction`` held out (a
    permutation from ``split_seed``); each candidate's solver is built on
    the rest, run for its iterations with replayable noise from each seed,
    and scored on the held-out rows. Neither the private training rows nor
    the test set are touched. A candidate that fails (diverges, impossible
    settings) scores NaN, with the first error in the ``error`` column.
    """
    plan = plan_run(config, data_dir)
    blocks, y = _public_rows(config, plan)
    fit, val = _holdout(len(y), fraction, split_seed)
    n_val = val.size
    fit_data = VerticalData([B[fit] for B in blocks], y[fit])
    val_blocks, y_val = [B[val] for B in blocks], y[val]
    rows = []
    for cand in candidates:
        c = config.with_overrides(_overrides(cand))
        cls = plan.solver_cls
        losses, accs, errors = [], [], []
        for seed in seeds:
            try:
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    solver = cls.build(
                        fit_data,
                        objective=make_objective(c),
                        params=cls.typed_params(c.solver.values),
                        privacy=cls.typed_privacy(c.privacy.values),
                        streams=Streams(seed, replayable_noise=True),
                        iterations=c.solver.epochs,
                    )
                    for _ in range(c.solver.epochs):
                        solver.step()
                    u = solver.decision_function(val_blocks)
                losses.append(log_loss(u, y_val) if np.all(np.isfinite(u)) else np.nan)
                accs.append(accuracy(u, y_val) if np.all(np.isfinite(u)) else np.nan)
            except (ValueError, VFLError, np.linalg.LinAlgError) as exc:
                losses.append(np.nan)
                accs.append(np.nan)
                errors.append(" ".join(str(exc).split())[:200])
        rows.append(
            {
                **{k: json.dumps(v) if isinstance(v, list) else v for k, v in cand.items()},
                "val_logloss_mean": float(np.mean(losses)),
                "val_logloss_std": float(np.std(losses, ddof=1)) if len(losses) > 1 else 0.0,
                "val_accuracy_mean": float(np.mean(accs)),
                "n_val": int(n_val),
                "n_fit": int(fit.size),
                "seeds": len(seeds),
                "error": errors[0] if errors else "",
            }
        )
    return pd.DataFrame(rows)


def _tuned(config, candidates, key: str, out: Path, data_dir, echo, seeds=None) -> pd.DataFrame:
    """:func:`validation_scores`, cached under ``out/tuning`` by a hash of its inputs."""
    seeds = VAL_SEEDS if seeds is None else seeds
    ident = {
        "config": config.to_dict(),
        "candidates": candidates,
        "seeds": list(seeds),
        "fraction": VAL_FRACTION,
        "split_seed": VAL_SPLIT_SEED,
        "version": 2,
    }
    text = json.dumps(ident, sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = out / "tuning" / f"{key}-{digest}.csv"
    if path.is_file():
        return pd.read_csv(path)
    t0 = perf_counter()
    table = validation_scores(
        config, candidates, data_dir=data_dir, seeds=seeds, fraction=VAL_FRACTION, split_seed=VAL_SPLIT_SEED
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.partial")
    table.to_csv(tmp, index=False, float_format="%.10g")
    tmp.replace(path)
    echo(f"    {key}: {len(candidates)} candidates x {len(seeds)} seeds on validation ({perf_counter() - t0:.0f} s)")
    return table


def _references(config, data_dir) -> tuple[list[dict], pd.DataFrame]:
    """Party 1 alone and all features: sklearn's logistic regression on the run's blocks.

    Its l2 weight (``objective.lam``, sum form) is chosen from :data:`REFERENCE_LAMS`
    on the same split of the public rows as every method, then refitted on
    all training rows and scored on the test set once.
    """
    plan = plan_run(config, data_dir)
    first = plan.first
    train, test, y, y_test = first.data.blocks, first.test, np.asarray(first.data.y), first.y_test
    public, y_pub = _public_rows(config, plan)
    fit, val = _holdout(len(y_pub), VAL_FRACTION, VAL_SPLIT_SEED)
    join = (lambda bs: sp.hstack(bs, format="csr")) if sp.issparse(train[0]) else np.hstack
    rows, tables = [], []
    for label, parties in (("party 1 alone", 1), ("all features", len(train))):
        X, X_test, P = join(train[:parties]), join(test[:parties]), join(public[:parties])
        scores = [
            fit_sklearn_baseline(P[fit], y_pub[fit], P[val], y_pub[val], Objective(lam=lam))["test_logloss"]
            for lam in REFERENCE_LAMS
        ]
        lam = REFERENCE_LAMS[int(np.argmin(scores))]
        tables.append(
            pd.DataFrame(
                {"objective.lam": REFERENCE_LAMS, "val_logloss_mean": scores, "method": label, "epsilon": np.inf}
            )
        )
        res = fit_sklearn_baseline(X, y, X_test, y_test, Objective(lam=lam))
        rows.append(
            {
                "method": label,
                "epsilon": np.inf,
                "test_logloss_mean": res["test_logloss"],
                "test_logloss_std": 0.0,
                "test_accuracy_mean": res["test_accuracy"],
                "test_accuracy_std": 0.0,
                "n_seeds": 1,
                "chosen": json.dumps({"objective.lam": lam}),
            }
        )
    return rows, pd.concat(tables, ignore_index=True)


def _best(table: pd.DataFrame, candidates: list[dict]) -> dict:
    scores = table["val_logloss_mean"].to_numpy()
    if not np.any(np.isfinite(scores)):
        raise VFLError("every validation candidate failed; see the tuning table")
    return candidates[int(np.nanargmin(scores))]


# ---------------------------------------------------------------- final runs --
def _final(config, overrides: dict, name: str, out: Path, data_dir, echo, repeats=None):
    """Run (or resume) ``config`` with ``overrides`` on all training rows, ``repeats`` draws."""
    repeats = REPEATS if repeats is None else repeats
    c = config.with_overrides(
        _overrides({**overrides, "run.repeats": repeats, "privacy.replayable_noise": True, "name": name})
    )
    run = ensure_run(c, out / "runs" / name, data_dir)
    reps = run.repeats if run.repeats is not None else run.metrics.assign(repeat=0)
    last = reps[reps["epoch"] == reps["epoch"].max()]

    def std(col):  # over the repeats; one repeat has none
        return float(last[col].std(ddof=1)) if len(last) > 1 else 0.0

    return run, {
        "test_logloss_mean": float(last["test_logloss"].mean()),
        "test_logloss_std": std("test_logloss"),
        "test_accuracy_mean": float(last["test_accuracy"].mean()),
        "test_accuracy_std": std("test_accuracy"),
        "epsilon_tight": float(last["epsilon_tight"].mean()) if "epsilon_tight" in last else np.nan,
        "n_seeds": int(len(last)),
        "solver_seconds": float(run.manifest.result.solver_seconds),
    }


def _tune_and_run(base, grid, name: str, eps: float, out: Path, data_dir, seeds, repeats, echo=None):
    """One private method at one epsilon: its candidates scored on validation, the best run
    on all training rows; returns (tuning table, the choice, its test numbers). The module's
    settings come as arguments: a worker process does not see a caller's changes to them."""
    echo = echo or (lambda _msg: None)
    cands = [{**g, "privacy.epsilon": eps} for g in grid]
    table = _tuned(base, cands, name, out, data_dir, echo, seeds=seeds)
    best = _best(table, cands)
    _, res = _final(base, best, name, out, data_dir, echo, repeats=repeats)
    return table, best, res


def _dataset(
    dataset: str,
    configs: Path,
    out: Path,
    data_dir,
    echo,
    epsilons=EPSILONS,
    methods=("stacking", "admm"),
    jobs: int = 1,
) -> tuple[pd.DataFrame, pd.DataFrame, dict, dict]:
    stack_name, admm_name = DATASETS[dataset]
    stack = figure_config(configs, stack_name)
    admm = figure_config(configs, admm_name)
    echo(f"  {dataset}: references and non-private stacking")
    rows, ref_table = _references(stack, data_dir)
    tuning = [ref_table]
    # party 1 fits its own local model with the l2 weight it chose for itself
    # (its own data, no privacy cost to the passive parties)
    lam1 = json.loads(rows[0]["chosen"])["objective.lam"]
    plain = _nonprivate(stack).with_overrides(_overrides({"solver.lam1": lam1}))
    table = _tuned(plain, NONPRIVATE_GRID, f"{dataset}-nonprivate", out, data_dir, echo)
    best = _best(table, NONPRIVATE_GRID)
    tuning.append(table.assign(method="non-private stacking", epsilon=np.inf))
    run, res = _final(plain, best, f"{dataset}-stacking-nonprivate", out, data_dir, echo, repeats=1)
    baselines = run.baselines
    rows.append(
        {
            "method": "non-private stacking",
            "epsilon": np.inf,
            **res,
            "chosen": json.dumps({"solver.lam1": lam1, **best}),
        }
    )
    # the private runs: party 1's lam1, and the local models' floor lam_local
    # from the non-private choice (the limit epsilon -> infinity)
    lam_local = plain.with_overrides(_overrides(best)).solver.values["lam_local"]
    stack = stack.with_overrides(_overrides({"solver.lam1": lam1, "solver.lam_local": lam_local}))
    points = [
        (method, base, grid, short, eps)
        for method, base, grid, short in (
            ("private stacking", stack, STACKING_GRID, "stacking"),
            ("ADMM sharing (row-level DP)", admm, ADMM_GRID, "admm"),
        )
        if short in methods
        for eps in epsilons
    ]
    args = [
        (base, grid, f"{dataset}-{short}-eps{eps:g}", eps, out, data_dir, VAL_SEEDS, REPEATS)
        for _, base, grid, short, eps in points
    ]
    if jobs > 1 and len(args) > 1:  # every (method, epsilon) is tuned and run on its own
        results = Parallel(n_jobs=min(jobs, len(args)))(delayed(_tune_and_run)(*a) for a in args)
    else:
        results = [_tune_and_run(*a, echo=echo) for a in args]
    for (method, base, _, short, eps), (table, best, res) in zip(points, results):
        tuning.append(table.assign(method=method, epsilon=eps))
        fixed = (
            {"solver.lam1": stack.solver.values["lam1"], "solver.lam_local": stack.solver.values["lam_local"]}
            if short == "stacking"
            else {}
        )
        rows.append(
            {"method": method, "epsilon": eps, **res, "kind": _kind(base), "chosen": json.dumps({**fixed, **best})}
        )
        echo(
            f"    {method}, epsilon {eps:g}: test log loss {res['test_logloss_mean']:.4f} "
            f"+- {res['test_logloss_std']:.4f} (chosen on validation: {json.dumps(best)})"
        )
    return pd.DataFrame(rows), pd.concat(tuning, ignore_index=True), baselines, run.manifest


def reproduce(
    which: str,
    out: Path,
    configs: Path,
    data_dir=None,
    jobs: int = 2,
    echo=click.echo,
    datasets=None,
    epsilons=EPSILONS,
    methods=("stacking", "admm"),
) -> list[Path]:
    """Tune on validation, run, and draw the privacy-utility figure (``which``: utility | all).

    ``datasets``, ``epsilons`` and ``methods`` (``"stacking"``, ``"admm"``)
    restrict the figure (tests use them); the reference lines always come.
    Each (method, epsilon) is tuned and run in one of ``jobs`` processes.
    """
    (figure,) = PAPER.chosen(which)  # refuses an unknown figure
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = perf_counter()
    runs = {}
    for dataset in datasets or DATASETS:
        table, tuning, _, manifest = _dataset(dataset, Path(configs), out, data_dir, echo, epsilons, methods, jobs)
        runs[DATASETS[dataset][0]] = [engine.Point({"data": dataset}, Utility(table, tuning, manifest))]
    written = engine.draw(figure, runs, out, sys.modules[__name__], echo=echo, save=save_figure)[0]
    echo(f"  done in {perf_counter() - t0:.0f} s")
    return written
