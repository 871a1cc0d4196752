"""``run.backend = "dask"`` without a cluster: what the config refuses before any worker is
asked, and the inference traffic each solver declares.
"""

from __future__ import annotations

import pytest

from vfl.admm.sharing import ADMMSharingSolver
from vfl.core.errors import ConfigError
from vfl.experiments.config import apply_overrides, config_from_dict
from vfl.experiments.registry import get_solver


def test_inference_is_counted_from_the_declaration():
    """a9a's 16,281 test rows scored once: 2 parties x 16,281 shares of 8 bytes (Hu et al.'s
    eq. (1)); a trainer's or an agent's own model sends nothing; private stacking's party 1
    scores its own columns."""

    sharing = get_solver("admm_sharing").inference.traffic(2, 16_281)
    assert (sharing.messages, sharing.bytes) == (2, 260_496)
    assert sharing.sent_bytes.tolist() == [130_248, 130_248] == [16_281 * 8] * 2
    assert sharing.hub_received_bytes == 260_496
    stacking = get_solver("private_stacking").inference.traffic(3, 1000)
    assert stacking.sent_messages.tolist() == [0, 1, 1] and stacking.bytes == 16_000
    for name in ("dp_admm", "ldp_admm"):
        assert get_solver(name).inference.traffic(5, 16_281).messages == 0


def test_a_solver_that_runs_in_process_only_is_refused_on_dask(monkeypatch):
    """Every shipped solver runs on Dask; a solver that declares only this process (a new
    paper's, say) is refused with the config, naming those that run there."""

    monkeypatch.setattr(ADMMSharingSolver, "backends", ("inprocess",))
    raw = {
        "data": {"dataset": "synthetic"},
        "partition": {"columns": [5, 7]},
        "solver": {"name": "admm_sharing"},
        "run": {"backend": "dask"},
    }
    with pytest.raises(
        ConfigError,
        match=r"admm_sharing runs in-process only \(the dask "
        r"backend runs consensus_admm, .*fdml_sgd",
    ):
        config_from_dict(raw)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (['run.backend="ray"'], "run.backend"),
    ],
)
def test_the_backend_is_validated_with_the_config(overrides, message):
    raw = {
        "data": {"dataset": "synthetic"},
        "partition": {"columns": [5, 7]},
        "solver": {"name": "admm_sharing"},
        "run": {"backend": "dask"},
    }

    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config_from_dict(apply_overrides(raw, overrides))
