"""The audit's neighbouring pairs of ADMM sharing under ``privacy.neighbours`` (docs/audit.md),
and the datasets with every party's protected rows replaced."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from vfl.core.layouts import VerticalData
from vfl.core.neighbours import Neighbour, label_neighbours

from .share_relations import RELATIONS

__all__ = ["SharingAuditPairs"]


class SharingAuditPairs:
    """The neighbouring datasets the white-box audit runs ADMM sharing on (a mixin of the solver)."""

    @classmethod
    def protected_replaced(cls, data, privacy, rng):
        """Every party's rows replaced by random unit rows (inside both relations); the labels,
        which the relation does not protect, kept."""
        blocks = []
        for B in data.blocks:
            R = rng.standard_normal(B.shape)
            R /= np.linalg.norm(R, axis=1, keepdims=True)
            blocks.append(sp.csr_matrix(R) if sp.issparse(B) else R)
        return VerticalData(blocks, data.y)

    @classmethod
    def neighbours(cls, data, privacy, rng):
        """Neighbouring pairs under ``privacy.neighbours``, per party (docs/audit.md).

        Each relation makes its own natural pair and the candidates for the
        worst case (:meth:`ColumnRelation.neighbours`, :meth:`RowRelation.neighbours`).
        """
        privacy = cls.typed_privacy(privacy)
        relation = RELATIONS[privacy.neighbours]()
        out = []
        y = np.asarray(data.y, dtype=float)
        for m, D in enumerate(data.blocks):
            D = D.tocsr() if sp.issparse(D) else np.asarray(D, dtype=float)

            def with_block(B, m=m):
                blocks = list(data.blocks)
                blocks[m] = B
                return VerticalData(blocks, data.y)

            def pair(kind, what, B, base=None, m=m):
                return Neighbour(
                    f"party {m + 1}, {what} ({kind})",
                    kind,
                    m,
                    with_block(B),
                    what,
                    None if base is None else with_block(base),
                )

            out.extend(relation.neighbours(D, y, rng, pair))
        if privacy.label_epsilon is not None:  # and the label relation's
            out += label_neighbours(data, rng)
        return out
