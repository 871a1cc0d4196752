"""How a run's repeats (``run.repeats``) add up in its privacy accounting.

A *deployment* (a run that claims a guarantee, with noise nobody can replay)
publishes what every repeat releases: R models of the same records. Its
repeats are one mechanism, so their releases go into one ledger
(:func:`vfl.core.ledger.compose`), and the epsilon it prints and records is
the composed one; ``--stop-at-budget`` stops a repeat before the iteration
that would take the whole run over ``privacy.budget_epsilon``.

A *simulation* (replayable noise) reruns one experiment R times to average
out the noise: its repeats are independent replications, each with the
printed epsilon, and the summary and the manifest say so.

``epsilon_tight`` in a deployment's metrics (the mean over repeats and each
repeat's rows alike) is the run's epsilon once every repeat has run that
many iterations: the mean at iteration k is a function of exactly those
releases.
"""

from __future__ import annotations

from vfl.core.ledger import PrivacyLedger, compose

__all__ = ["Repeats"]


class Repeats:
    """The ledgers of a run's repeats: kept apart (a simulation) or composed (a deployment).

    ``same_units``: each unit holds the same records in every repeat (the
    setting's parties are fixed); otherwise rows are dealt afresh per repeat
    and a repeat is charged its worst unit (:func:`~vfl.core.ledger.compose`).
    """

    def __init__(self, config, same_units: bool):
        self.count = config.run.repeats
        self.deployment = bool(config.privacy.claims_guarantee and not config.privacy.replayable_noise)
        self.same_units = bool(same_units)
        self.ledgers: list[PrivacyLedger] = []  # finished repeats'
        self.histories: list[list] = []  # per repeat: the releases of each iteration

    @property
    def composed(self) -> bool:
        return self.deployment and self.count > 1

    def _with_done(self, ledger: PrivacyLedger) -> PrivacyLedger:
        if not self.deployment or not self.ledgers:
            return ledger
        return compose([*self.ledgers, ledger], same_units=self.same_units)

    def epsilon(self, ledger: PrivacyLedger) -> float:
        """What the run has spent with ``ledger`` the current repeat's (the earlier repeats'
        releases included in a deployment)."""
        return self._with_done(ledger).epsilon()

    def ahead(self, ledger: PrivacyLedger, planned) -> float:
        """The run's epsilon if the current repeat released ``planned`` next."""
        return self._with_done(ledger.with_releases(planned)).epsilon()

    def finish(self, ledger: PrivacyLedger | None, history: list) -> None:
        if ledger is not None:
            self.ledgers.append(ledger)
            self.histories.append(history)

    def ledger(self) -> PrivacyLedger | None:
        """The run's ledger: every repeat's releases composed (a deployment), else the last
        repeat's."""
        if not self.ledgers:
            return None
        if self.composed:
            return compose(self.ledgers, same_units=self.same_units)
        return self.ledgers[-1]

    def composed_epsilons(self, epochs) -> dict[int, float]:
        """Iteration k -> the run's epsilon once every repeat has run min(k, its length)
        iterations (a deployment's ``epsilon_tight`` column)."""
        delta, accountant = self.ledgers[0].delta, self.ledgers[0].accountant
        running = [PrivacyLedger(delta, accountant) for _ in self.histories]
        done = [0] * len(self.histories)
        out = {}
        for k in sorted(set(int(e) for e in epochs)):
            for r, history in enumerate(self.histories):
                while done[r] < min(k, len(history)):
                    running[r].add(history[done[r]])
                    done[r] += 1
            out[k] = compose(running, same_units=self.same_units).epsilon()
        return out

    def recompose(self, frames: list) -> list:
        """A deployment's frames with ``epsilon_tight`` the composed run's; others as they are."""
        if not self.composed:
            return frames
        eps = self.composed_epsilons(e for f in frames for e in f["epoch"])
        return [f.assign(epsilon_tight=f["epoch"].map(eps).astype(float)) for f in frames]

    def describe(self) -> dict | None:
        """The manifest's ``privacy.spent.repeats`` (None for a single run)."""
        if self.count <= 1:
            return None
        if not self.deployment:
            return {
                "count": self.count,
                "composed": False,
                "meaning": f"independent replications of a simulation (replayable noise): "
                f"each repeat alone spends the recorded epsilon; releasing all "
                f"{self.count} would cost more, and nothing here covers that",
            }
        return {
            "count": self.count,
            "composed": True,
            "per_repeat_epsilon_tight": [x.epsilon() for x in self.ledgers],
            "units": (
                "the same records at each unit in every repeat: charges added per unit"
                if self.same_units
                else "rows dealt afresh per repeat: each repeat charged at its worst unit"
            ),
            "meaning": f"a deployment publishes all {self.count} repeats' releases: they are "
            "composed in one ledger, and epsilon_tight is the whole run's "
            "(at iteration k: every repeat's releases up to k); epsilon_paper "
            "and the other claims are one repeat's",
        }
