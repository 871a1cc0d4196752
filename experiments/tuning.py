"""``vfl tune``: hyper-parameters chosen without spending the guarantee by accident.

Two ways, both scored by the log loss on rows declared public (``partition.public``,
rows of the test part the relation does not protect), and both writing the chosen
config with a ``[tuning]`` table that records how it was chosen:

- ``public``: every grid point is trained on two thirds of the public rows (with the
  config's own noise, as a simulation) and scored on the other third, averaged over
  ``seeds``; nothing private is touched, nothing is spent;
- ``private``: random search with a random number of trials (Papernot and Steinke 2022,
  :mod:`vfl.privacy.random_search`): K ~ D_{eta, gamma} trials, each a random grid point run on
  the private data, the best one's point chosen. Every candidate is calibrated to the
  config's ``privacy.epsilon``, so each trial is ``mu``-GDP with the ``mu`` of that
  target; the written config carries ``(mu, eta, gamma)`` and the run charges the
  tuning's RDP before its own releases: the epsilon ``vfl run`` prints includes it.
"""

from __future__ import annotations

import itertools
import json
import os
import tomllib
from pathlib import Path

import numpy as np

from vfl.core.errors import ConfigError
from vfl.core.ledger import PrivacyLedger
from vfl.core.metrics import log_loss
from vfl.core.solver import Setting
from vfl.core.streams import Streams
from vfl.datasets.dataset import RawDataset
from vfl.datasets.parties.tomlw import dumps
from vfl.privacy import gaussian_delta
from vfl.privacy.random_search import draw_trials, gamma_for_mean, tuning_rdp

from .config import apply_overrides, config_from_dict, load_config, read_toml
from .registry import typed_privacy
from .run_data import load_config_dataset
from .run_plan import plan_run
from .runner import run_experiment
from .sweep import parse_grid

__all__ = ["tune", "gdp_mu_of"]

#: keys a private search may not vary: every candidate must meet one target
_FIXED = ("privacy.epsilon", "privacy.delta", "privacy.accountant", "privacy.replayable_noise")


def gdp_mu_of(epsilon: float, delta: float) -> float:
    """The GDP ``mu`` whose exact ``(epsilon, delta)`` profile meets ``delta`` at
    ``epsilon``: every Gaussian mechanism calibrated to ``(epsilon, delta)`` is ``mu``-GDP
    with at most this ``mu`` (an RDP calibration is looser, hence below it)."""

    lo, hi = 1e-9, 1e3
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(epsilon, 1.0 / mid) > delta:
            hi = mid
        else:
            lo = mid
    return hi


def _points(grid: dict) -> list[list[str]]:
    keys = list(grid)
    return [
        [f"{k}={json.dumps(v) if isinstance(v, str) else v}" for k, v in zip(keys, combo)]
        for combo in itertools.product(*(grid[k] for k in keys))
    ]


def _public_rows(config, raw) -> np.ndarray:
    """The test part's rows the vertical setting declares public (the same draw)."""
    k = config.partition.public
    perm = Streams(config.run.seed).get("split").permutation(raw.test.n_rows)
    return np.sort(perm[:k])


def _score(plan) -> float:
    blocks, y = plan.first.public
    return float(log_loss(plan.solver.decision_function(blocks), y))


def _public(config, points, seeds: int, data_dir, on_trial) -> tuple[list, dict]:

    raw, _ = load_config_dataset(config, data_dir, keep=False)
    pub = _public_rows(config, raw)
    order = Streams(config.run.seed).get("tuning").permutation(pub.size)
    fit, val = np.sort(pub[order[: 2 * pub.size // 3]]), np.sort(pub[order[2 * pub.size // 3 :]])
    sub = RawDataset(
        name=raw.name,
        train=raw.test.take(fit),
        y_train=raw.y_test[fit],
        test=raw.test.take(val),
        y_test=raw.y_test[val],
        description=f"{pub.size} rows declared public",
        schema=raw.schema,
        parties=raw.parties,
        defaults=raw.defaults,
        provenance={"split": {"test": "test_path"}},
    )
    extra = ["partition.public=0"]
    if config.privacy.claims_guarantee:
        extra.append("privacy.replayable_noise=true")  # public rows: a simulation
    table = []
    for point in points:
        scores = []
        for s in range(seeds):
            cfg = config.with_overrides(point + extra + [f"run.seed={config.run.seed + s}"])
            try:
                plan = plan_run(cfg, raw=sub)
            except ConfigError as exc:
                raise ConfigError(f"vfl tune --public trains on the public rows alone: {exc}") from None
            result = run_experiment(cfg, plan=plan, with_baselines=False)
            scores.append(float(result.metrics["test_logloss"].iloc[-1]))
        row = {"point": point, "score": float(np.mean(scores))}
        table.append(row)
        if on_trial:
            on_trial(row)
    return table, {"rows": int(pub.size), "fit_rows": int(fit.size), "validation_rows": int(val.size), "seeds": seeds}


def _private(config, points, trials: float, eta: float, data_dir, on_trial) -> tuple[list, dict]:

    values = typed_privacy(config)
    if getattr(values, "epsilon", None) is None:
        raise ConfigError(
            "vfl tune --private needs privacy.epsilon, the target every "
            "candidate is calibrated to (each trial then has its mu)"
        )
    mu = gdp_mu_of(float(values.epsilon), float(values.delta))
    gamma = gamma_for_mean(trials, eta)
    rng = (
        Streams(config.run.seed).get("tuning")
        if config.privacy.replayable_noise
        else np.random.default_rng(np.frombuffer(os.urandom(16), dtype=np.uint32))
    )
    k = draw_trials(eta, gamma, rng)
    table = []
    for i in range(k):
        point = points[int(rng.integers(len(points)))]
        cfg = config.with_overrides(point + [f"run.seed={config.run.seed + 1 + i}"])
        plan = plan_run(cfg, data_dir)
        result = run_experiment(cfg, plan=plan, with_baselines=False)
        ledger = result.ledger
        if ledger is None or not ledger.gaussian_only or ledger.gaussian_mu() > mu * (1 + 1e-6):
            raise ConfigError(
                f"vfl tune --private: {config.solver.name}'s trial is not a "
                f"Gaussian mechanism within mu = {mu:.4g} of its target; tune it "
                "with --public"
            )
        row = {"point": point, "score": _score(plan), "trial": i + 1}
        table.append(row)
        if on_trial:
            on_trial(row)
    return table, {
        "trials": k,
        "expected_trials": trials,
        "eta": eta,
        "gamma": gamma,
        "trial_mu": mu,
        "distribution": "truncated negative binomial D_{eta, gamma} (eta = 0: logarithmic)",
    }


def tune(
    config_path,
    grid_items,
    *,
    mode: str,
    out: Path,
    overrides=(),
    seeds: int = 3,
    trials: float = 10.0,
    eta: float = 0.0,
    data_dir=None,
    overwrite: bool = False,
    on_trial=None,
) -> dict:
    """Tune ``config_path`` over ``--grid`` and write the chosen config to ``out``."""
    config = load_config(config_path, list(overrides))
    grid = parse_grid(grid_items)
    points = _points(grid)
    for point in points:  # every candidate is a valid config, checked before any work
        config.with_overrides(point)
    out = Path(out)
    if out.suffix != ".toml":
        raise ConfigError(f"--out {out}: the chosen config is a TOML file (name it *.toml)")
    if out.exists() and not overwrite:
        raise ConfigError(f"{out} exists; pass --overwrite to replace it")
    if config.tuning is not None and config.tuning.private:  # its spend would be dropped
        raise ConfigError(
            f"{Path(config_path).name} was tuned privately already (its [tuning] "
            "is charged to its runs); tune the config it came from"
        )
    if config.setting is not Setting.VERTICAL:
        raise ConfigError(
            f"vfl tune scores on rows declared public of a vertical run; {config.solver.name} is {config.setting.value}"
        )
    if config.partition.public < 3:
        raise ConfigError(
            "vfl tune scores on rows declared public: set partition.public (at "
            "least 3 rows of the test part, which the guarantee does not protect)"
        )
    if mode == "private":
        if not config.privacy.claims_guarantee:
            raise ConfigError(
                "vfl tune --private accounts the tuning in the run's epsilon: "
                "the config claims no guarantee (set privacy.delta), use --public"
            )
        fixed = [k for k in grid if k in _FIXED]
        if fixed:
            raise ConfigError(
                f"--grid {fixed[0]}: a private search calibrates every candidate to one target; tune the other keys"
            )
        if not trials > 1:
            raise ConfigError(f"--trials must be > 1 (the expected number), got {trials:g}")
        table, record = _private(config, points, trials, eta, data_dir, on_trial)
    else:
        table, record = _public(config, points, seeds, data_dir, on_trial)
    best = min(table, key=lambda row: row["score"])
    chosen = dict(p.split("=", 1) for p in best["point"])
    raw = apply_overrides(read_toml(config_path), [*overrides, *best["point"]])
    raw["tuning"] = {
        "method": mode,
        **record,
        "metric": "log loss on the public rows",
        "score": best["score"],
        "grid": grid,
        "chosen": {k: _value(v) for k, v in chosen.items()},
    }

    text = dumps(raw, f"{Path(config_path).name} tuned by `vfl tune --{mode}`")
    config_from_dict(__import__("tomllib").loads(text), default_name=out.stem)
    tmp = out.with_name(f".{out.name}.partial")
    tmp.write_text(text)
    os.replace(tmp, out)
    result = {"chosen": chosen, "table": table, "record": raw["tuning"], "out": out}
    lines = [
        f"chosen: {', '.join(f'{k} = {v}' for k, v in chosen.items())} (log loss "
        f"{best['score']:.4f} on the public rows)"
    ]
    if mode == "private":
        result["epsilon"] = tuning_epsilon(record, float(config.privacy.values["delta"]))
        lines.append(
            f"{record['trials']} trials (random, expected {trials:g}); the tuning alone "
            f"is ({result['epsilon']:.3g}, {config.privacy.values['delta']:g})-DP, and "
            "the run's epsilon includes it"
        )
    lines.append(f"wrote {out}; run it: vfl run --config {out}")
    result["summary"] = "\n".join(lines)
    return result


def _value(text: str):

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def tuning_epsilon(record: dict, delta: float) -> float:
    """The epsilon of the tuning alone (the best trial's output), at ``delta``."""

    ledger = PrivacyLedger(delta, "rdp")
    ledger.add_rdp(tuning_rdp(ledger.orders, record["trial_mu"], record["eta"], record["gamma"]))
    return ledger.epsilon()
