"""``vfl attack``: run a config in this process, tap its messages, attack them.

A passive party (party 2 by default) attacks the labels with what it
received that depends on them (the solver's ``label_view``); party 1 attacks
a passive party's features with the shares it received (``share_view``) and a
public auxiliary set of rows whose features it knows. Each attack's outcome
(:class:`vfl.attacks.Outcome`): its AUC with DeLong's interval, the ceiling
of the guarantee that covers what it attacks (the label ledger's for label
attacks, the feature ledger's for feature reconstruction; None without one)
and the epsilon the attack shows. A simulation: the scores use the true
labels and features, which no party of a deployment holds.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from vfl.attacks import ATTACKS, MIN_KNOWN, Outcome, outcome
from vfl.attacks import label as attack_fns
from vfl.core.errors import ConfigError

from .config import config_from_dict, load_config
from .received import read_received
from .registry import get_solver
from .repeat_setup import _prepare, _streams
from .run_data import load_config_dataset
from .settings import prepare
from .transcript import record

__all__ = ["attack_either", "attack_run", "check_attack", "run_attack"]

_FUNCTIONS = {
    "label-norm": attack_fns.label_norm,
    "label-direction": attack_fns.label_direction,
    "model-completion": attack_fns.model_completion,
}
#: known labels each attack needs (feature reconstruction: rows of the auxiliary set)
NEED = {"label-norm": 1, "label-direction": 1, "model-completion": MIN_KNOWN, "feature-reconstruction": MIN_KNOWN}


def check_attack(config, name: str, known: int, party: int) -> None:
    """Everything about the request that needs no data (one line each, before any work)."""
    cls = get_solver(config.solver.name)
    if name not in ATTACKS:
        raise ConfigError(f"unknown attack {name!r}; attacks: {', '.join(ATTACKS)}")
    if name not in cls.attacks:
        defined = ", ".join(cls.attacks) or "none"
        raise ConfigError(f"attack {name} is not defined for {cls.name} (defined: {defined})")
    if known < NEED[name]:
        what = "rows of the auxiliary set" if name == "feature-reconstruction" else "known labels"
        raise ConfigError(f"{name} needs at least {NEED[name]} {what}; --known is {known}")
    if party < 2:
        raise ConfigError(f"--party {party}: the passive parties are 2..M (party 1 holds the labels)")


def _binary_target(D) -> np.ndarray:
    """The passive party's most balanced binary feature (``column > its median``)."""
    D = D.toarray() if sp.issparse(D) else np.asarray(D, dtype=float)
    B = D > np.median(D, axis=0, keepdims=True)
    p = B.mean(axis=0)
    return B[:, int(np.argmax(np.minimum(p, 1 - p)))]


def run_attack(config, name: str, *, known: int = 40, party: int = 2, data_dir=None, transcript=None) -> Outcome:
    """Attack ``name`` on a run of ``config``; ``party``: the passive party (1-based) that
    attacks the labels or whose features party 1 attacks."""

    if not hasattr(config, "solver"):  # a path
        config = load_config(config)
    check_attack(config, name, known, party)
    cls = get_solver(config.solver.name)
    tr = transcript or record(config, data_dir=data_dir, evaluate=False)
    _check_party(party, len(tr.prepared.data.blocks))
    streams = _streams_of(config)
    n = len(tr.prepared.data.y)
    view = (cls.label_view if ATTACKS[name] == "passive" else cls.share_view)(tr.exchanges, party - 1, n, streams)
    return _attack(config, name, view, tr.prepared.data, known, party, tr.guarantees)


def attack_run(run_dir, name: str, *, known: int = 40, party: int = 2, data_dir=None) -> Outcome:
    """Attack ``name`` on what a finished run wrote (``received.npz``, :mod:`.received`): what
    passive party ``party`` received, or what party 1 received from it. The scores are
    judged against the run's own training rows, read again from its config (a simulation's
    measure: no party of a deployment holds both)."""

    raw, manifest, views = read_received(run_dir)
    config = config_from_dict(raw)
    check_attack(config, name, known, party)
    key = f"{'labels' if ATTACKS[name] == 'passive' else 'shares'}_party{party}"
    noted = manifest.get("received") or {}
    _check_party(party, int(noted.get("parties", party)))
    if key not in views:
        return _attack(config, name, None, None, known, party, {})
    dataset, _ = load_config_dataset(config, data_dir, keep=False)
    prepared = _prepare(prepare(config, dataset, get_solver(config.solver.name)), config, 0)
    if views[key].shape[0] != len(prepared.data.y):
        raise ConfigError(
            f"{run_dir}: {key} has {views[key].shape[0]} rows, the run's data "
            f"{len(prepared.data.y)} (the data changed since the run)"
        )
    guarantees = {
        k: None if v is None or v.get("epsilon") is None else (float(v["epsilon"]), float(v.get("delta") or 0.0))
        for k, v in noted.get("guarantees", {}).items()
    }
    return _attack(config, name, views[key], prepared.data, known, party, guarantees)


def attack_either(run_dir, config_path, name: str, **kw) -> Outcome:
    """``vfl attack``: a finished run's directory, or a config run here (one of the two)."""
    if (run_dir is None) == (config_path is None):
        raise ConfigError(
            "give a finished run's directory (vfl attack RUN_DIR) or --config "
            "(run here)" + (", not both" if run_dir is not None else "")
        )
    return attack_run(run_dir, name, **kw) if run_dir is not None else run_attack(config_path, name, **kw)


def _check_party(party: int, n_parties: int) -> None:
    if party - 1 >= n_parties:
        raise ConfigError(f"--party {party}: the run has {n_parties} parties")


def _streams_of(config):

    return _streams(config, 0)


def _attack(config, name, view, data, known, party, guarantees) -> Outcome:
    """Score ``view`` (what the attacker received; None: nothing) with the attack ``name``."""
    if view is None:
        raise ConfigError(
            f"the run has no message that {name} reads: "
            + (
                f"party {party} received nothing that depends on the labels"
                if ATTACKS[name] == "passive"
                else f"party {party} sent party 1 no shares of the training rows"
            )
        )
    y = np.asarray(data.y, dtype=float)
    n = y.size
    rng = _streams_of(config).get("audit", 1)
    pick = rng.permutation(n)
    seen, rest = pick[:known], pick[known:]
    if ATTACKS[name] == "passive":
        scores = _FUNCTIONS[name](view, seen, y[seen])
        truth, guarantee = y > 0, guarantees.get("labels")
    else:
        truth = _binary_target(data.blocks[party - 1])
        scores = attack_fns.feature_reconstruction(view, truth, seen)
        guarantee = guarantees.get("features")
    if np.unique(truth[rest]).size < 2:
        raise ConfigError(f"{name}: the attacked samples have one class only")
    return outcome(name, scores[rest], truth[rest], rng, guarantee)
