"""What a run returns (:class:`RunResult`) and the layout of the records it writes: the
metrics' columns, in order, and communication.csv's rows per repeat, phase, iteration and unit
(the protocol's traffic, the test rows' scoring, the alignment, the diagnostics)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from vfl.core.units import Session
from vfl.core.wire import Traffic

from .config import Config
from .manifest import DatasetRecord, Manifest

#: columns every run has, first, in this order (``objective`` and
#: ``suboptimality`` only when the solver reports an objective)
BASE_COLUMNS = [
    "epoch",
    "objective",
    "suboptimality",
    "train_logloss",
    "test_logloss",
    "train_accuracy",
    "test_accuracy",
]


PRIVACY_COLUMNS = ["epsilon_paper", "epsilon_tight", "delta_paper", "delta_tight", "epsilon_labels", "delta_labels"]


#: cumulative communication, every message counted once (:mod:`vfl.core.wire`)
COMMUNICATION_COLUMNS = ["messages", "bytes"]


#: communication.csv: per repeat, phase, iteration and unit (unit 0 is the hub); phase
#: "training" is the protocol's iterations, "inference" one scoring of the test rows with the
#: final model (the solver's :class:`~vfl.core.wire.Inference`, at the last iteration)
COMMUNICATION_FILE_COLUMNS = [
    "repeat",
    "phase",
    "epoch",
    "unit",
    "sent_messages",
    "sent_bytes",
    "received_messages",
    "received_bytes",
]


PHASES = ("training", "inference", "alignment", "diagnostics")


@dataclass
class RunResult:
    config: Config
    manifest: Manifest  # manifest.json (validated: :mod:`.manifest`)
    metrics: pd.DataFrame  # one row per iteration (the mean over repeats)
    baselines: dict
    coef: Any = None  # the final model (all parties' blocks concatenated, or the global model)
    repeats: pd.DataFrame | None = None  # per-repeat rows, when run.repeats > 1
    #: per repeat, iteration and unit: what the protocol sent and received (communication.csv)
    communication: pd.DataFrame | None = None
    #: the privacy ledger of the run (every repeat composed), or None
    ledger: Any = None


def _columns(rows: list[dict], solver_cls) -> list[str]:
    present = set().union(*rows)
    base = [c for c in BASE_COLUMNS if c in present]
    declared = [c for c in solver_cls.columns if c in present and c not in base and not c.endswith("_time_s")]
    timing = ["wall_time_s"] + [c for c in solver_cls.columns if c.endswith("_time_s")]
    privacy = [c for c in PRIVACY_COLUMNS if c in present]
    used = set(base + declared + timing + privacy + COMMUNICATION_COLUMNS)
    rest = [c for c in rows[0] if c not in used] + sorted({c for r in rows for c in r} - used - set(rows[0]))
    return base + declared + timing + privacy + rest + COMMUNICATION_COLUMNS


def _aggregate(frames: list[pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean per iteration over repeats, and the per-repeat rows in one frame."""
    allr = pd.concat([f.assign(repeat=r) for r, f in enumerate(frames)], ignore_index=True)
    numeric = [c for c in frames[0].columns if c != "epoch"]
    mean = allr.groupby("epoch", sort=True)[numeric].mean().reset_index()
    return mean[frames[0].columns], allr[["repeat", *frames[0].columns]]


def _traffic_rows(traffic, repeat: int, epoch: int, phase: int = 0) -> np.ndarray:
    """One iteration's :class:`~vfl.core.wire.Traffic` as communication.csv rows (hub first);
    ``phase`` indexes :data:`PHASES`."""
    units = len(traffic.sent_messages)
    table = np.empty((units + 1, len(COMMUNICATION_FILE_COLUMNS)), dtype=np.int64)
    table[:, 0], table[:, 1], table[:, 2], table[:, 3] = repeat, phase, epoch, np.arange(units + 1)
    table[0, 4:] = (
        traffic.hub_sent_messages,
        traffic.hub_sent_bytes,
        traffic.hub_received_messages,
        traffic.hub_received_bytes,
    )
    table[1:, 4:] = np.stack(
        [traffic.sent_messages, traffic.sent_bytes, traffic.received_messages, traffic.received_bytes], axis=1
    )
    return table


def _sessions(solver) -> list:
    """The unit sessions a solver's seams hold (``solver.parties.session``, ...)."""

    return [v.session for v in vars(solver).values() if isinstance(getattr(v, "session", None), Session)]


def _diagnostic_rows(solver, repeat: int) -> list[np.ndarray]:
    """A repeat's diagnostics as communication.csv rows: the hub, then each host (as its
    first unit; a group of providers or agents answers in one message)."""
    out = []
    for session in _sessions(solver):
        d = session.diagnostics
        if not d.any():
            continue
        table = np.empty((session.n + 1, len(COMMUNICATION_FILE_COLUMNS)), dtype=np.int64)
        table[:, 0], table[:, 1], table[:, 2] = repeat, PHASES.index("diagnostics"), solver.iteration
        table[0, 3], table[1:, 3] = 0, [a + 1 for a, _ in session.hosts]
        table[0, 4:] = d.sum(axis=0)  # the hub sends the requests and receives the replies
        table[1:, 4:] = d[:, [2, 3, 0, 1]]
        out.append(table)
    return out


def _alignment_traffic(info: dict | None) -> list:
    """communication.csv rows of phase ``alignment`` (repeat 0, iteration 0): what the
    parties' PSI and agreement sent, per party (unit m is party m; the hub sends nothing)."""

    aligned = DatasetRecord.alignment_in(info)
    rows = []
    for part in aligned.values():
        t = {k: np.asarray(v, dtype=np.int64) for k, v in part["traffic"].items()}
        rows.append(
            _traffic_rows(
                Traffic(t["sent_messages"], t["sent_bytes"], t["received_messages"], t["received_bytes"], 0, 0, 0, 0),
                0,
                0,
                phase=PHASES.index("alignment"),
            )
        )
    return rows
