"""One repeat's pieces: its random streams, its distribution of the data, its solver built,
and the run's privacy ledgers (the features' relation and the labels')."""

from __future__ import annotations

import warnings

import numpy as np

from vfl.core.errors import ConfigError
from vfl.core.ledger import PrivacyLedger
from vfl.core.solver import Solver
from vfl.core.streams import Streams
from vfl.privacy.random_search import tuning_rdp

from .config import Config
from .registry import get_solver, typed_privacy


def _streams(config: Config, repeat: int) -> Streams:
    # a run that claims a guarantee and cannot be replayed is a deployment: exact noise
    exact = config.privacy.claims_guarantee and not config.privacy.replayable_noise
    return Streams(config.run.seed, repeat=repeat, replayable_noise=config.privacy.replayable_noise, exact_noise=exact)


#: the record / replay hook of :mod:`vfl.experiments.released` (None in every ordinary run):
#: its ``prepared(cls, prepared, privacy)`` gives each repeat's data, and its ``observer``
#: releases for every solver built
_TAP = None


def _build(cls, config: Config, prepared, streams: Streams, backend=None) -> Solver:
    data = prepared.data if backend is None else backend.data(prepared, streams.repeat)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # overflow in setup is a user error
            solver = cls.build(
                data,
                objective=prepared.objective,
                params=cls.typed_params(config.solver.values),
                privacy=cls.typed_privacy(config.privacy.values),
                streams=streams,
                iterations=config.solver.epochs,
            )
    except (ValueError, RuntimeWarning, np.linalg.LinAlgError, OverflowError) as exc:
        raise ConfigError(f"{config.solver.name}: {exc}") from None
    if _TAP is not None:
        solver.observer = _TAP.observer
    return solver


def _prepare(setting, config: Config, repeat: int):
    """One repeat's distribution of the data; an impossible one is a user error."""
    try:
        prepared = setting.prepare(_streams(config, repeat))
    except ValueError as exc:
        raise ConfigError(f"{config.setting.value} setting: {' '.join(str(exc).split())}") from None
    if _TAP is not None:
        prepared = _TAP.prepared(get_solver(config.solver.name), prepared, dict(config.privacy.values))
    return prepared


def _ledger(config: Config):
    p = typed_privacy(config)
    delta = getattr(p, "delta", None)
    if not config.privacy.claims_guarantee or delta is None:
        return None  # (a run may claim label DP alone)

    ledger = PrivacyLedger(delta, getattr(p, "accountant", "pld"))
    if config.tuning is not None and config.tuning.private:  # spent before the run
        t = config.tuning.values
        ledger.add_rdp(tuning_rdp(ledger.orders, t["trial_mu"], t["eta"], t["gamma"]))
    return ledger


def _label_ledger(config: Config, cls):
    """The label relation's ledger (:data:`~vfl.core.relations.LABELS`), or None."""
    p = cls.typed_privacy(config.privacy.values)
    if not cls.claims_label_guarantee(p):
        return None

    label_delta = getattr(p, "label_delta", None)
    return PrivacyLedger(
        label_delta or 0.0, getattr(p, "accountant", "pld") if label_delta else "rdp", relation="labels"
    )
