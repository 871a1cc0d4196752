"""What every unit of a vertical run receives and sends: the run's transcript (simulation).

:func:`record` runs a config in this process, every exchange of every session
tapped (:func:`vfl.core.units.tapped`), and returns the messages per call in
order, each with the party it went to. Two uses: the label-dependence check
(one label flipped, the same seed: which declared payloads moved,
tests/test_labels.py) and the attacks (:mod:`vfl.attacks`: what a passive
party received is what it attacks). A transcript holds exact and noisy values
alike, so it is a diagnostic of a simulation: never a deployment's output.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace

import numpy as np

from vfl.core.errors import ConfigError
from vfl.core.solver import Setting
from vfl.core.units import tapped

from .repeat_setup import _build, _label_ledger, _ledger, _streams
from .run_plan import plan_run

__all__ = ["Exchange", "Transcript", "record"]


@dataclass(frozen=True)
class Exchange:
    """One message each way between the coordinator and the units ``first .. stop - 1``."""

    call: str
    first: int
    stop: int
    request: object
    reply: object
    kind: str


@dataclass
class Transcript:
    """A run's exchanges in order, the run's prepared data and its solver."""

    exchanges: list = field(default_factory=list)
    #: the run's guarantees, ``"features"`` and ``"labels"``: (epsilon, delta) or None
    guarantees: dict = field(default_factory=dict)
    solver: object = None
    prepared: object = None
    protocol: object = None

    def of(self, call: str, party: int | None = None) -> list[Exchange]:
        """The exchanges of ``call`` (with ``party``, 0-based: those that reached it)."""
        return [e for e in self.exchanges if e.call == call and (party is None or e.first <= party < e.stop)]


def _listener(out: Transcript):
    def listen(session, call, requests, replies):
        out.protocol = session.protocol
        for k, request in requests.items():
            a, b = session.hosts[k]
            out.exchanges.append(
                Exchange(call.name, a, b, copy.deepcopy(request), copy.deepcopy(replies[k]), call.kind.value)
            )

    return listen


def flipped(prepared, i: int):
    """``prepared`` with sample ``i``'s training label flipped (the label relation)."""
    y = np.array(prepared.data.y, dtype=float, copy=True)
    y[i] = -y[i]
    return replace(prepared, data=replace(prepared.data, y=y))


def record(config, *, flip: int | None = None, data_dir=None, plan=None, evaluate: bool = True) -> Transcript:
    """Run ``config`` (a vertical one) in this process, every exchange tapped; ``flip``: the
    training label of that sample flipped first; ``evaluate``: then the diagnostics and the
    scoring of the test rows (their calls tapped too)."""

    if config.setting is not Setting.VERTICAL:
        raise ConfigError(
            f"{config.solver.name} is not a vertical solver: its units hold rows, and no label leaves the label holder"
        )
    plan = plan or plan_run(config, data_dir)
    prepared = plan.first if flip is None else flipped(plan.first, flip)
    out = Transcript(prepared=prepared)
    books = {"features": _ledger(config), "labels": _label_ledger(config, plan.solver_cls)}
    with tapped(_listener(out)):
        solver = _build(plan.solver_cls, config, prepared, _streams(config, 0))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for _ in range(config.solver.epochs):
                solver.step()
                for book in books.values():
                    if book is not None:
                        book.add(solver.releases())
            if evaluate:
                solver.evaluate()
                solver.train_margins()
                solver.decision_function(prepared.test)
    out.solver = solver
    for key, book in books.items():
        eps = None if book is None else book.epsilon()
        out.guarantees[key] = (eps, book.delta) if eps is not None and np.isfinite(eps) else None
    return out
