"""The label relation: every vertical protocol declares which payloads depend on the labels
(``Call.labels``), checked by flipping one label and watching which messages move."""

from __future__ import annotations

import pytest

from vfl.core.messages import same
from vfl.core.relations import LABELS
import tomllib

from vfl.experiments.config import config_from_dict
from vfl.experiments.transcript import record

TINY = """
name = "tiny"
[data]
dataset = "synthetic"
options = {{ n_train = 60, n_test = 20, n_features = 8, seed = 3 }}
[partition]
columns = [4, 4]
[objective]
lam = 0.01
[solver]
name = "{solver}"
epochs = {epochs}
{extra}
"""

SOLVERS = {"admm_sharing": (3, ""), "fdml_sgd": (2, "batch_size = 20"),
           "private_stacking": (1, "")}


def tiny(solver: str, extra: str = "", privacy: str = ""):
    epochs, more = SOLVERS[solver]
    text = TINY.format(solver=solver, epochs=epochs, extra="\n".join([more, extra]))
    return config_from_dict(tomllib.loads(text + (f"\n[privacy]\n{privacy}\n" if privacy else "")))


def _moved(a, b) -> dict:
    """Per call, which payloads differ between two transcripts of the same run."""
    out = {}
    assert [e.call for e in a.exchanges] == [e.call for e in b.exchanges]
    for x, y in zip(a.exchanges, b.exchanges):
        got = out.setdefault(x.call, set())
        if not same(x.request, y.request):
            got.add("request")
        if not same(x.reply, y.reply):
            got.add("reply")
    return out


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_declared_label_dependence_is_what_moves(solver):
    config = tiny(solver)
    base, other = record(config), record(config, flip=7)
    moved = _moved(base, other)
    declared = {c.name: set(c.labels) for c in base.protocol.calls}
    for call, payloads in moved.items():
        assert payloads == declared[call], (call, payloads, declared[call])
    # the labels reach the passive parties: some request depends on them
    assert any(c.labels_to_unit for c in base.protocol.calls)


def test_label_relation_is_typed():
    assert LABELS.name == "labels" and "flipped" in str(LABELS)
    assert LABELS.describe()["towards"].startswith("the passive parties")
