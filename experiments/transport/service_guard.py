"""A party service's own privacy: its limits, its ledger on disk, its refusals.

A party is started with limits of its own (``[party.limits]`` of its PARTY.toml): the
neighbouring relations it accepts, the least noise (``min_sigma``) or the largest epsilon
of a run (``max_epsilon``) it accepts, and its total budget (``budget_epsilon``, over every
run it ever serves from its directory). Its noise floor is calibrated from its own config
by the solver family's own calibration (the function the coordinator calls,
``Solver.unit_noise``), never taken from the coordinator.

Every release request goes through :meth:`Guard.admit` before any noise is drawn: a scale
below the floor, a sensitivity other than the party's own, or a release that would take its
ledger beyond its budget is refused (:class:`PrivacyRefused`, a typed error the coordinator
receives; one line in the party's log) and nothing is released. An admitted release is
written to ``releases.jsonl`` in the party's directory (fsync'ed) *before* the noise is
drawn, with the run, repeat and sequence number of the request and a digest of the request
itself: a request for a release already on disk is refused, so a deployment release is never
drawn twice, not even by a restarted party.

Once drawn, the release's reply (the released value, a codec frame: what the coordinator
received, covered by the guarantee) is kept beside the record (``replies/``, fsync'ed), so
that a coordinator resuming the run (``vfl run --resume``) is sent the value already
released for a request it sends again (:meth:`Guard.recorded`), never a new draw; the
party's ledger is not charged again. A finished run's replies are let go
(:meth:`Guard.forget`); the record stays.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt

from vfl.core.ledger import PrivacyLedger
from vfl.core.protocol import ProtocolError
from vfl.core.releases import Release
from vfl.core.sampling import grid_slack

__all__ = ["Guard", "PrivacyRefused", "RECORD"]

#: the party's record of its releases, in its own directory
RECORD = "releases.jsonl"
#: the released replies, one codec frame per release, beside the record
REPLIES = "replies"
log = logging.getLogger("vfl.party")


class PrivacyRefused(ProtocolError):
    """A release the party's own limits refuse (nothing is released)."""


#: one line of the record (releases.jsonl): JSON values by key
Record = dict[str, Any]


class Guard:
    """Party ``m``'s (1-based) limits, floor and ledger (see the module docstring).

    ``floor``: the least noise multiplier ``scale / sensitivity`` it accepts;
    ``sensitivity``: its own enforced sensitivity of one release (one per kind of release,
    each with its own floor, when the party makes several: private stacking's model, shares
    and moments); ``budget``: its total epsilon at ``delta`` (None: no budget beyond the
    floor).
    """

    def __init__(
        self,
        directory: str | Path,
        m: int,
        *,
        floor: npt.ArrayLike,
        sensitivity: npt.ArrayLike,
        delta: float,
        accountant: str,
        budget: float | None,
        deployment: bool,
    ) -> None:
        self.dir, self.m = Path(directory), int(m)
        self.floors = np.atleast_1d(np.asarray(floor, dtype=float))
        self.sensitivities = np.atleast_1d(np.asarray(sensitivity, dtype=float))
        if self.floors.shape != self.sensitivities.shape:
            raise ValueError("one floor per kind of release")
        self.floor, self.sensitivity = float(self.floors.min()), float(self.sensitivities[0])
        self.delta, self.budget, self.deployment = float(delta), budget, bool(deployment)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / RECORD
        self.total = PrivacyLedger(self.delta, accountant)  # every run from this directory
        self.accountant = accountant
        self.drawn: set[tuple[str, int, int | None, int]] = (
            set()
        )  # (run, repeat, seq, part) of every deployment release on disk
        self.requested: set[tuple[str, int, str]] = set()  # (run, repeat, request digest) of every release on disk
        self.requested_parts: set[tuple[str, int, str, int]] = set()  # the same with each release's part
        self.records = 0
        self.runs: dict[str, PrivacyLedger] = {}  # run -> its own ledger
        self.counts: dict[str, int] = {}  # run -> its releases
        self.last_seq: dict[str, int] = {}  # run -> the largest sequence number on its record
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                if not line.strip():
                    continue
                rec = json.loads(line)
                self.total.add([_event(rec)])
                self._note(rec)

    def _note(self, rec: Record) -> None:
        """One release on the record: its run's ledger, count and keys."""
        run = rec["run"]
        self.runs.setdefault(run, PrivacyLedger(self.delta, self.accountant)).add([_event(rec)])
        self.counts[run] = self.counts.get(run, 0) + 1
        part = rec.get("part", 0)
        self.drawn.add((run, rec["repeat"], rec["seq"], part))
        if rec.get("request"):
            self.requested.add((run, rec["repeat"], rec["request"]))
            self.requested_parts.add((run, rec["repeat"], rec["request"], part))
        if rec["seq"] is not None:
            self.last_seq[run] = max(self.last_seq.get(run, 0), int(rec["seq"]))
        self.records += 1

    def summary(self, run: str) -> dict[str, float]:
        """What the record says of ``run``: its releases, its epsilon, its last sequence number."""
        return {
            "releases": self.counts.get(run, 0),
            "epsilon": self.epsilon(run),
            "last_seq": self.last_seq.get(run, 0),
        }

    # -- the released replies ----------------------------------------------------------
    def _reply_path(self, run: str, repeat: int, request: str) -> Path:
        return self.dir / REPLIES / f"{run}-{int(repeat)}-{request}.frame"

    def recorded(self, run: str, repeat: int, request: str) -> bytes | None:
        """The reply already released for this request of ``run`` (its digest), or None."""
        if (run, int(repeat), request) not in self.requested:
            return None
        path = self._reply_path(run, repeat, request)
        if not path.is_file():  # admitted, but the party stopped before its reply was kept
            self._refuse(
                f"the release of this request of run {run} was drawn already and its "
                "value was not kept; a deployment release is never drawn again"
            )
        return path.read_bytes()

    def keep(self, run: str, repeat: int, request: str, frame: bytes) -> None:
        """Keep a drawn release's reply (atomically, fsync'ed) for a resumed coordinator."""
        path = self._reply_path(run, repeat, request)
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_suffix(".partial")
        with open(tmp, "wb") as f:
            f.write(frame)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def forget(self, run: str) -> None:
        """A finished run: its replies are let go (its record stays)."""
        for path in (self.dir / REPLIES).glob(f"{run}-*.frame"):
            path.unlink(missing_ok=True)

    def recalibrate(self, floor: npt.ArrayLike, sensitivity: npt.ArrayLike) -> None:
        """The floors and sensitivities of another repeat's data (its ledger stays)."""
        self.floors = np.atleast_1d(np.asarray(floor, dtype=float))
        self.sensitivities = np.atleast_1d(np.asarray(sensitivity, dtype=float))
        self.floor, self.sensitivity = float(self.floors.min()), float(self.sensitivities[0])

    def epsilon(self, run: str | None = None) -> float:
        ledger = self.total if run is None else self.runs.get(run)
        return 0.0 if ledger is None else ledger.epsilon()

    def admit(
        self,
        *,
        run: str,
        repeat: int,
        seq: int | None,
        scale: float,
        sensitivity: float,
        size: int,
        exact: bool,
        mechanism: str = "gaussian",
        request: str = "",
        part: int = 0,
    ) -> None:
        """Check one release and write it down, or refuse it (nothing drawn). ``request``:
        the request's digest (a request on the record is answered from it, never drawn);
        ``part``: which release of the request it is (a request may ask for several: private
        stacking's model, shares and moments)."""
        key = (run, int(repeat), seq, int(part))
        if self.deployment and (
            key in self.drawn or (request and (run, int(repeat), request, int(part)) in self.requested_parts)
        ):
            self._refuse(
                f"the release of request {seq} of run {run} was drawn already; a "
                "deployment release is never drawn again"
            )
        if mechanism != "gaussian":
            self._refuse(f"a {mechanism} release: this party accepts Gaussian releases only")
        kind = np.flatnonzero(np.isclose(sensitivity, self.sensitivities, rtol=1e-12, atol=0.0))
        if not kind.size:
            own = ", ".join(f"{v:.6g}" for v in self.sensitivities)
            self._refuse(
                f"the request states sensitivity {sensitivity:.6g}, the party's own "
                f"{'is' if self.sensitivities.size == 1 else 'are'} {own}"
            )
        floor = float(self.floors[kind[0]])
        event = _release(scale, float(self.sensitivities[kind[0]]), size, exact)
        z = float(event.scale[0] / event.sensitivity[0])
        if not z >= floor * (1 - 1e-9):
            self._refuse(f"noise multiplier {z:.6g} is below the party's floor {floor:.6g} (sigma {scale:.6g})")
        run_ledger = self.runs.setdefault(run, PrivacyLedger(self.delta, self.accountant))
        after = self.total.with_releases([event])
        spent = after.epsilon()
        if self.budget is not None and not spent <= self.budget:
            self._refuse(
                f"the release would spend epsilon {spent:.4g} of its budget {self.budget:g} (delta {self.delta:g})"
            )
        self.total = after
        rec = {
            "time": round(time.time(), 3),
            "party": self.m,
            "run": run,
            "repeat": int(repeat),
            "seq": seq,
            "part": int(part),
            "release": self.counts.get(run, 0) + 1,
            "mechanism": mechanism,
            "scale": float(event.scale[0]),
            "sensitivity": float(event.sensitivity[0]),
            "size": int(size),
            "exact": bool(exact),
            "epsilon_run": run_ledger.with_releases([event]).epsilon(),
            "epsilon_total": spent,
            "delta": self.delta,
            "request": request,
        }
        with open(self.path, "a") as f:
            f.write(json.dumps(rec) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self._note(rec)

    def _refuse(self, why: str) -> NoReturn:
        line = f"refused: {why}; nothing released"
        log.warning("party %d: %s", self.m, line)
        raise PrivacyRefused(line)


def _release(scale: float, sensitivity: float, size: int, exact: bool) -> Release:
    """The party's own event, as :meth:`~vfl.core.solver.Solver.record_release` makes it:
    an exact sampler's grid rounding added to the sensitivity."""
    sens = float(sensitivity)
    if exact:
        sens = sens + float(grid_slack("gaussian", 1.0, size)) * float(scale)
    return Release(
        "gaussian", np.zeros(1, dtype=int), np.array([sens]), np.array([float(scale)]), int(size), bool(exact)
    )


def _event(rec: Record) -> Release:
    return Release(
        rec["mechanism"],
        np.zeros(1, dtype=int),
        np.array([rec["sensitivity"]]),
        np.array([rec["scale"]]),
        int(rec["size"]),
        bool(rec["exact"]),
    )
