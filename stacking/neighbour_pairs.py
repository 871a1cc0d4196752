"""The audit's neighbouring datasets of private stacking (:data:`~vfl.stacking.statement.NEIGHBOURS`):
natural, adversarial and canary rows of one passive party's block."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from vfl.core.layouts import VerticalData
from vfl.core.neighbours import Neighbour, label_neighbours

from . import mechanism as mech


class StackingNeighbours:
    """The neighbours the white-box audit runs private stacking on (a mixin of the solver)."""

    @classmethod
    def protected_replaced(cls, data, privacy, rng):
        """Every passive party's training rows replaced by random unit-norm rows; party 1's
        block and the labels (not protected) kept."""
        blocks = [data.blocks[0]]
        for B in data.blocks[1:]:
            R = rng.standard_normal(B.shape)
            R /= np.linalg.norm(R, axis=1, keepdims=True)
            blocks.append(sp.csr_matrix(R) if sp.issparse(B) else R)
        return VerticalData(blocks, data.y)

    # -- the audit's neighbours ---------------------------------------------------
    @classmethod
    def neighbours(cls, data, privacy, rng):
        """Neighbouring datasets under :data:`NEIGHBOURS`, for every passive party.

        Natural: a random sample's row replaced by the row of a random sample
        with the other label. Adversarial, at the sample with the largest
        per-sample gradient of a reference local fit (``lam = 1``): its row
        negated, and its row replaced by the unit vector among ``-a_i``,
        ``+-v`` (``v`` the Hessian's flattest direction) and ``+-x*/||x*||``
        that moves the local model most by one Newton step.
        """
        y = np.asarray(data.y, dtype=float)
        m0 = mech.base_rate_logit(y)
        out = []
        for m in range(1, len(data.blocks)):
            D = data.blocks[m]
            D = D.tocsr() if sp.issparse(D) else np.asarray(D, dtype=float)
            dense_row = (lambda i, D=D: D[i].toarray().ravel()) if sp.issparse(D) else (lambda i, D=D: D[i].copy())

            def with_row(i, new, D=D, m=m):
                B = D.tolil() if sp.issparse(D) else D.copy()
                B[i] = new
                blocks = list(data.blocks)
                blocks[m] = B.tocsr() if sp.issparse(D) else B
                return VerticalData(blocks, data.y)

            i = int(rng.integers(len(y)))
            others = np.flatnonzero(y != y[i])
            j = int(others[rng.integers(others.size)]) if others.size else (i + 1) % len(y)
            out.append(
                Neighbour(
                    f"party {m + 1}, row {i} replaced (natural)",
                    "natural",
                    m,
                    with_row(i, dense_row(j)),
                    f"row {i} of party {m + 1}'s block replaced by row {j} (a sample with the other label)",
                )
            )
            # adversarial: the sample whose loss gradient is largest under a reference fit
            x, _ = mech.fit_logistic(D, y, 1.0, offset=m0)
            u = m0 + np.asarray(D @ x).ravel()
            p = 1.0 / (1.0 + np.exp(y * u))  # sigma(-y u)
            k = int(np.argmax(p))
            a = dense_row(k)
            h = 1.0 / (1.0 + np.exp(-u)) / (1.0 + np.exp(u))
            H = mech._dense_hessian(D.toarray() if sp.issparse(D) else D, h, np.full(D.shape[1], 1.0))
            ev, V = np.linalg.eigh(H)
            cands = [-a, V[:, 0], -V[:, 0]]
            if np.linalg.norm(x) > 0:
                cands += [x / np.linalg.norm(x), -x / np.linalg.norm(x)]
            g_old = -y[k] * p[k] * a

            def shift(b):
                pb = 1.0 / (1.0 + np.exp(y[k] * (m0 + b @ x)))  # noqa: B023 (called within this iteration)
                return float(np.linalg.norm(np.linalg.solve(H, g_old + y[k] * pb * b)))  # noqa: B023 (called within this iteration)

            best = max(cands[1:], key=shift)
            out.append(
                Neighbour(
                    f"party {m + 1}, row {k} negated (adversarial)",
                    "adversarial",
                    m,
                    with_row(k, -a),
                    f"row {k} of party {m + 1}'s block (largest per-sample gradient) replaced by its negation",
                )
            )
            out.append(
                Neighbour(
                    f"party {m + 1}, row {k} moved most (adversarial)",
                    "adversarial",
                    m,
                    with_row(k, best / np.linalg.norm(best)),
                    f"row {k} of party {m + 1}'s block replaced by the unit vector "
                    f"that moves the local model most (one Newton step: "
                    f"{shift(best):.3g} at lam = 1)",
                )
            )
            if np.linalg.norm(x) > 0:
                # canary: row k along the local model (its share is as large as a unit row's
                # can be), against the opposite row: the share moves by 2 |x~ . x^|
                xh = x / np.linalg.norm(x)
                out.append(
                    Neighbour(
                        f"party {m + 1}, canary row {k} along the local model, negated (candidate)",
                        "candidate",
                        m,
                        with_row(k, -xh),
                        f"row {k} of party {m + 1}'s block set "
                        "to x*/||x*|| (x* a reference local fit), replaced by -x*/||x*||",
                        with_row(k, xh),
                    )
                )
        if cls.typed_privacy(privacy).label_epsilon is not None:  # and the label relation's
            out += label_neighbours(data, rng)
        return out
