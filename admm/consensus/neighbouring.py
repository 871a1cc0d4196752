"""The audit's neighbouring datasets of Huang et al.'s solvers (one provider record replaced,
:data:`~.base._NEIGHBOURS`): natural pairs and canaries along a reference fit's direction."""

from __future__ import annotations

import math

import numpy as np

from vfl.core.layouts import HorizontalData
from vfl.core.neighbours import Neighbour

from ..local_solvers import newton


class ConsensusNeighbours:
    """The neighbours the white-box audit runs the consensus solvers on (a mixin of the solver)."""

    @classmethod
    def protected_replaced(cls, data, privacy: dict, rng: np.random.Generator):
        """Every provider record replaced by a random one inside the relation
        (``||a|| = 1``, ``b`` in {-1, +1}); the public pre-training rows kept."""
        A = rng.standard_normal(np.shape(data.A))
        A /= np.linalg.norm(A, axis=-1, keepdims=True)
        b = rng.choice([-1.0, 1.0], size=np.shape(data.b))
        return HorizontalData(A, b, data.public)

    @classmethod
    def neighbours(cls, data, privacy: dict, rng: np.random.Generator) -> list:
        """Neighbouring datasets under :data:`_NEIGHBOURS`, for the audit.

        Natural: a random record of a random provider replaced by another
        provider's record with the other label. Candidates (the audit keeps
        the one whose runs exercise most): the same record with its
        label flipped, its features negated, or both; each keeps ``||a|| <=
        1`` and ``b`` in {-1, +1}, so every pair is inside the relation. The
        public pre-training rows are the same in both datasets.
        """
        A = np.asarray(data.A, dtype=float)
        b = np.asarray(data.b, dtype=float)
        N, m, _ = A.shape
        unit, j = int(rng.integers(N)), int(rng.integers(m))
        others = np.argwhere(b != b[unit, j])
        others = others[others[:, 0] != unit] if N > 1 else others
        donor, k = (int(v) for v in others[rng.integers(len(others))]) if len(others) else ((unit + 1) % N, j)

        def with_record(a_new, b_new):
            A1, b1 = A.copy(), b.copy()
            A1[unit, j], b1[unit, j] = a_new, b_new
            return HorizontalData(A1, b1, data.public)

        a, y = A[unit, j], b[unit, j]
        pairs = [
            Neighbour(
                f"provider {unit + 1}, record {j} replaced (natural)",
                "natural",
                unit,
                with_record(A[donor, k], b[donor, k]),
                f"provider {unit + 1}'s record {j} replaced by provider {donor + 1}'s record {k} (the other label)",
            )
        ]
        for what, a_new, y_new in (
            ("label flipped", a, -y),
            ("features negated", -a, y),
            ("features negated, label flipped", -a, -y),
        ):
            pairs.append(
                Neighbour(
                    f"provider {unit + 1}, record {j} {what} (candidate)",
                    "candidate",
                    unit,
                    with_record(a_new, y_new),
                    f"provider {unit + 1}'s record {j}: {what}",
                )
            )
        # Canaries. A record enters through b a sigma(-b a.w); one pair flips the part
        # orthogonal to the model direction e while both records are slightly misclassified
        # (b a.e = -a0 < 0): the gradients differ by 2 sqrt(1 - a0^2) sigma(a0 ||w||), which
        # approaches Lemma 1's 2 only as ||w|| grows (a label flip gives exactly 1, since
        # sigma(t) + sigma(-t) = 1). e is the direction of a reference fit of every record
        # (where the iterates go; sum b a, its first guess, is 0.8 off on adult) and a0 spans
        # the best angle, cos(theta) maximizing sin(theta) sigma(||w|| cos(theta)) at the
        # iterates' norms (about 2 on adult: a0 = 0.45).
        z = rng.standard_normal(A.shape[2])
        for e, what in (
            (_reference_direction(A, b), "a reference fit of every record"),
            (_unit(np.einsum("nm,nmd->d", b, A), A.shape[2]), "sum b a"),
        ):
            w = z - (z @ e) * e
            if not np.linalg.norm(w) > 0:
                continue
            w /= np.linalg.norm(w)
            for a0 in (0.3, 0.45, 0.6):
                c = math.sqrt(1.0 - a0 * a0)
                base = with_record(-a0 * e + c * w, 1.0)
                pairs.append(
                    Neighbour(
                        f"provider {unit + 1}, canary record {j} (b a.e = -{a0}, e along {what}), "
                        f"its part orthogonal to e negated (candidate)",
                        "candidate",
                        unit,
                        with_record(-a0 * e - c * w, 1.0),
                        f"provider {unit + 1}'s record {j} set to -{a0} e + {c:.2f} w (e the "
                        f"direction of {what}, w orthogonal to it, label 1), its w part negated",
                        base,
                    )
                )
        return pairs


def _reference_direction(A, b) -> np.ndarray:
    """The unit direction of a logistic fit of every provider's records (a small ridge: the
    direction, not the scale, is what the canaries need); ``sum b a`` if that fit is 0."""
    N, m, d = A.shape
    fit = newton(A.reshape(1, N * m, d), b.reshape(1, N * m), alpha2=1e-3, tol=1e-8).w[0]
    return _unit(fit if np.any(fit) else np.einsum("nm,nmd->d", b, A), d)


def _unit(v, d) -> np.ndarray:
    return v / np.linalg.norm(v) if np.any(v) else np.eye(d)[0]
