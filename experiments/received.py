"""What each party of a vertical run received, written beside the run (``vfl run
--record-received``) for ``vfl attack RUN_DIR``.

A run's protocol exchanges are tapped as they happen (:func:`vfl.core.units.tapped`, the
coordinator's side of every round: in-process, on Dask or over the party services), and
at the end each passive party's *views* are kept, as :mod:`vfl.experiments.attack` reads
them: what party m received that depends on the labels (the solver's ``label_view``: ADMM
sharing's pulls, FDML's derivatives, private stacking's labels) and what party 1 received
from it (``share_view``), one row per training sample. ``received.npz`` holds them as
``labels_party<m>`` and ``shares_party<m>`` (float64; an array a protocol does not send is
absent), repeat 1 only. They are the protocol's messages, so covered by the run's
guarantee as every message is; the manifest's ``received`` section says which guarantee
bounds an attack on each (the label one towards the passive parties, the feature one
towards party 1).
"""

from __future__ import annotations

import copy
import json
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from vfl.core.column_kinds import RELEASED
from vfl.core.errors import ConfigError
from vfl.core.protocol import PROTOCOL
from vfl.core.solver import Setting
from vfl.core.units import tapped

from .registry import get_solver
from .repeat_setup import _streams
from .transcript import Exchange

__all__ = ["FILE", "Received", "read_received", "recording"]

FILE = "received.npz"


class Received:
    """The tap of one run: its protocol exchanges (repeat 1), then the views per party."""

    def __init__(self, config):

        self.config, self.cls = config, get_solver(config.solver.name)
        if self.cls.setting is not Setting.VERTICAL:
            raise ConfigError(
                f"--record-received: {self.cls.name} is not a vertical solver "
                "(its units hold rows; no party receives the labels)"
            )
        self.exchanges: list = []

    def __call__(self, session, call, requests, replies) -> None:

        if session.repeat == 0 and call.kind is PROTOCOL:
            for k, request in requests.items():
                a, b = session.hosts[k]
                self.exchanges.append(
                    Exchange(call.name, a, b, copy.deepcopy(request), copy.deepcopy(replies[k]), call.kind.value)
                )

    def views(self, n_parties: int, n: int) -> dict[str, np.ndarray]:

        out = {}
        for m in range(1, n_parties):
            for what, view in (("labels", self.cls.label_view), ("shares", self.cls.share_view)):
                V = None if view is None else view(self.exchanges, m, n, _streams(self.config, 0))
                if V is not None:
                    out[f"{what}_party{m + 1}"] = np.asarray(V, dtype=np.float64)
        return out

    def keep(self, result, data):
        """Note the views in ``result``'s manifest; returns the writer of ``received.npz``
        (``data``: the run's vertical data, as the coordinator holds it)."""
        n_parties, n = len(data.blocks), len(data.y)
        views = self.views(n_parties, n)
        manifest = result.manifest.dump()
        privacy = manifest.get("privacy") or {}
        labels = (privacy.get("label_guarantee") or {}).get("spent")
        spent = privacy.get("spent")
        manifest["received"] = {
            "file": FILE,
            "repeat": 1,
            "parties": int(n_parties),
            "arrays": {k: list(v.shape) for k, v in views.items()},
            "labels_party<m>": "what passive party m received that depends on the labels",
            "shares_party<m>": "what party 1 received from party m",
            "guarantees": {
                "labels": None if not labels else {"epsilon": labels.get("epsilon"), "delta": labels.get("delta")},
                "features": None
                if not spent
                else {"epsilon": spent.get("epsilon_tight"), "delta": spent.get("delta_tight")},
            },
        }
        manifest["released"]["files"][FILE] = RELEASED
        result.manifest = type(result.manifest).model_validate(manifest)

        def write(tmp: Path) -> None:
            with open(tmp / FILE, "wb") as fh:
                np.savez(fh, **views)

        return write


@contextmanager
def recording(config, on: bool):
    """Within the block, the run's exchanges are tapped (``on``), else nothing."""
    if not on:
        yield None
        return

    tap = Received(config)
    with tapped(tap):
        yield tap


def read_received(run_dir) -> tuple[dict, dict, dict]:
    """A finished run's config, manifest and views (ConfigError naming what is missing)."""

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir}: no such run directory")
    if not (run_dir / "manifest.json").is_file() or not (run_dir / "config.json").is_file():
        if (run_dir / "checkpoint.json").is_file():
            raise ConfigError(
                f"{run_dir} is a run that did not finish (checkpoint.json only): vfl run --resume {run_dir} first"
            )
        raise ConfigError(f"{run_dir} is not a run directory (no manifest.json and config.json)")
    if not (run_dir / FILE).is_file():
        raise ConfigError(
            f"{run_dir} has no {FILE}: the run did not record what its parties received (vfl run --record-received)"
        )
    try:
        config = json.loads((run_dir / "config.json").read_text())
        manifest = json.loads((run_dir / "manifest.json").read_text())
        with np.load(run_dir / FILE, allow_pickle=False) as z:
            views = {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{run_dir}: cannot read the run ({exc})") from None
    return config, manifest, views
