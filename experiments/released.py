"""Which numbers of a private run are covered by its epsilon: a check by replay.

A column is *released* when it is a function of what the mechanism releases
plus data the relation does not protect (the test rows, party 1's block in
vertical FL). :func:`check_released` tests exactly that: it runs the config
once on its data, recording every release, and once on the same data with
*every* protected value replaced (``Solver.protected_replaced``), forced to
release the recorded values. A released column must come out identical; a
diagnostic one (a training loss, an objective, a score of an exact model)
generally moves.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from vfl.core.solver import add_noise, column_kinds

__all__ = ["check_released"]


class _Record:
    def __init__(self, rng):
        self.rng, self.log = rng, []

    def __call__(self, solver, event, mean, rng):
        out = add_noise(event.mechanism, mean, event.scale[0] if np.ndim(mean) == 1 else event.scale,
                        self.rng)
        self.log.append(out)
        return out


class _Replay:
    def __init__(self, log):
        self.log, self.i = log, 0

    def __call__(self, solver, event, mean, rng):
        if self.i >= len(self.log):
            raise RuntimeError("the replayed run released more than the recorded one")
        self.i += 1
        return self.log[self.i - 1]


def check_released(config, data_dir=None, seed: int = 0) -> dict:
    """Final metrics of ``config`` on its data and on its data with every protected value
    replaced, both releasing the same values. Returns ``{column: (kind, original,
    replaced)}`` for the base and solver columns."""
    from .runner import _build, _evaluate, plan_run

    plan = plan_run(config, data_dir)
    cls, prepared = plan.solver_cls, plan.first
    rng = np.random.default_rng(seed)
    other = replace(prepared, data=cls.protected_replaced(prepared.data, dict(config.privacy.values),
                                                          rng))
    runs = []
    record = _Record(np.random.default_rng(seed + 1))
    for prep, observer in ((prepared, record), (other, None)):
        solver = _build(cls, config, prep, _streams(config))
        solver.observer = observer if observer is not None else _Replay(record.log)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for _ in range(config.solver.epochs):
                solver.step()
            runs.append({**_evaluate(solver, prep), **{k: v for k, v in solver.evaluate().items()
                                                          if np.isscalar(v)}})
    kinds = column_kinds(cls, runs[0], config.privacy.claims_guarantee,
                         test_rows_private=bool(prepared.test_private))
    return {c: (kinds[c], runs[0][c], runs[1].get(c)) for c in runs[0]}


def _streams(config):
    from vfl.core.solver import Streams

    return Streams(config.run.seed, replayable_noise=True)
