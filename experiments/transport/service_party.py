"""One party as its own service: its data, its limits and its host (:class:`PartyService`).

The party runs on its own machine from its own PARTY.toml: the run's public config (data,
partition, preprocessing, objective, solver, privacy: what the coordinator's config says
too) and a ``[party]`` table of its own (its number, its address, its directory, its
certificate, key and CA, its privacy limits; :func:`read_party_config`). It reads its data
itself and keeps its own block (and its held-out columns) only, calibrates its noise
floor from its own config (:mod:`.service_guard`), and serves one protocol, its solver's,
through four methods of bytes (served by :mod:`.service_grpc`):

- ``Health``: the party's public facts (JSON of numbers and names: its number, protocol and
  version, rows, columns, the digest of each public config section) that the coordinator
  checks before anything is opened;
- ``Open`` and ``Call``: frames of :mod:`vfl.core.codec` for its protocol and no other,
  answered by its :class:`~vfl.core.host.Host` (validation, the protocol's closed table of
  handlers by call number, at-most-once handling); a deployment party's host refuses
  every diagnostic;
- ``Close``: the coordinator is done.

Every method first checks that the client's certificate names the coordinator (the TLS
layer has checked it against the deployment's CA); plaintext only with ``insecure`` on a
loopback address. Nothing binds 0.0.0.0 unless the config says so.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import cast

import numpy as np
import numpy.typing as npt

from vfl.core import codec
from vfl.core.arrays import FloatArray
from vfl.core.codec import Frame
from vfl.core.errors import ConfigError, DataError
from vfl.core.host import Host, StreamEnv
from vfl.core.layouts import VerticalData
from vfl.core.objective import Objective
from vfl.core.preprocessing import row_norms
from vfl.core.protocol import CONTROL, Protocol, UnitData
from vfl.core.sampling import ExactSampler
from vfl.core.solver import Solver, Values
from vfl.core.streams import Streams

from ..config import Config
from ..distribution import Prepared
from ..party_sides import OwnParty
from ..registry import get_solver
from ..repeat_setup import _prepare, _streams
from ..row_settings import HorizontalSetting, NetworkSetting
from ..run_data import _load_config_dataset
from ..settings import prepare
from ..vertical_setting import VerticalSetting
from .party_config import PartyConfig, public_digest
from .service_guard import Guard, PrivacyRefused

__all__ = ["PartyService"]

log = logging.getLogger("vfl.party")


class _PartyEnv(StreamEnv):
    """The party's own streams, every release admitted by its guard first."""

    def __init__(self, streams: Streams, service: PartyService) -> None:
        super().__init__(streams)
        self.service = service

    def noise(self, *unit: int) -> np.random.Generator | ExactSampler:
        if self.streams.exact_noise and not self.streams.replayable_noise:
            # the next release's noise is drawn while the party waits for its request
            return ExactSampler(pool=True)
        return super().noise(*unit)

    def release(
        self,
        mean: FloatArray,
        *,
        units: int | npt.ArrayLike,
        scale: npt.ArrayLike,
        sensitivity: float,
        rng: np.random.Generator | ExactSampler,
        mechanism: str = "gaussian",
        size: int | None = None,
        l2_sensitivity: float | None = None,
        rows: slice | None = None,
        total: int | None = None,
        **context: object,
    ) -> FloatArray:
        guard = self.service.guard
        if self.service.replaying:  # a seeded stream drawn again: the values already released
            if not self.replayable:
                raise PrivacyRefused(
                    "refused: a release drawn again in a replay; a deployment release is never drawn again"
                )
        elif guard is not None and not (scale == 0 if _scalar(scale) else False):
            run, repeat, seq, request = self.service.current
            part, self.service.part = self.service.part, self.service.part + 1
            guard.admit(
                run=run,
                repeat=repeat,
                seq=seq,
                part=part,
                scale=_one(scale),
                sensitivity=_one(sensitivity),
                size=int(np.size(mean)),
                exact=isinstance(rng, ExactSampler),
                mechanism=mechanism,
                request=request,
            )
            self.service.admitted = True
        return super().release(
            mean,
            units=units,
            scale=scale,
            sensitivity=sensitivity,
            rng=rng,
            mechanism=mechanism,
            size=size,
            l2_sensitivity=l2_sensitivity,
            rows=rows,
            total=total,
            **context,
        )


def _scalar(v: npt.ArrayLike) -> bool:
    return bool(np.ndim(v) == 0)


def _one(v: npt.ArrayLike) -> float:
    """The party's one value of a per-unit array (it is one unit), or the scalar."""
    a = np.ravel(np.asarray(v, dtype=float))
    if a.size != 1:
        raise PrivacyRefused(f"refused: a release for {a.size} units; this party is one")
    return float(a[0])


class PartyService:
    """Party ``pc.index``: its data, its limits and its host (see the module docstring)."""

    def __init__(self, pc: PartyConfig, config: Config, data_dir: str | Path | None = None) -> None:
        self.pc, self.config, self.m = pc, config, pc.index
        cls = get_solver(config.solver.name)
        protocol = cls.protocol
        if protocol is None or "services" not in cls.backends:
            raise ConfigError(f"party {self.m}: {cls.name} does not run as party services")
        self.cls = cls
        self.protocol: Protocol = protocol
        p = config.privacy
        self.deployment = bool(p.claims_guarantee and not p.replayable_noise)
        self.guard: Guard | None = None
        self.own: OwnParty | None = None
        self.data: UnitData | None = None
        #: the data's setting, kept where the rows are dealt afresh per repeat (providers)
        self.setting: VerticalSetting | HorizontalSetting | NetworkSetting | None = None
        self.rows: int | None = None
        self.width: int | None = None
        self.test_rows: int | None = None
        self.max_row_norm: float | None = None
        if config.data.dataset == "parties":  # its own file; its block once aligned (Align)
            if self.m == 1 and protocol.placement.first:
                raise ConfigError(f"party 1 is {cls.name}'s coordinator, not a party service")
            self.own = OwnParty(config, self.m, strict=not p.claims_guarantee)
        else:
            self._hold_registry(cls, data_dir)
        self.host = Host(protocol, simulation=not self.deployment)
        #: (run, repeat, seq, the request's digest) of the request in hand
        self.current: tuple[str, int, int | None, str] = ("", 0, None, "")
        self.part = 0  # which release of that request is next
        self.replaying = False
        self.admitted = False  # a release was admitted while handling the request in hand
        self.repeat = 0
        self.digest = public_digest(config)

    def _hold_registry(self, cls: type[Solver], data_dir: str | Path | None) -> None:
        """A dataset of one file (every party reads it and keeps its own columns)."""
        protocol, config = self.protocol, self.config
        dataset, _ = _load_config_dataset(config, data_dir, True)
        setting = prepare(config, dataset, cls)
        prepared = _prepare(setting, config, 0)
        vertical = isinstance(prepared.data, VerticalData)
        place = protocol.placement
        units = prepared.data.blocks if vertical else prepared.data.A
        if not place.first < self.m <= len(units):
            raise ConfigError(
                f"{place.word} {self.m}: the partition has {len(units)} {place.plural}"
                if self.m > len(units)
                else f"party {self.m} is {cls.name}'s coordinator, not a party service"
            )
        k = self.m - 1
        # rows dealt afresh per repeat (providers): the setting stays to deal the later ones
        self.setting = None if setting.same_units_every_repeat else setting
        self._hold(prepared.data.cut(k, self.m, prepared.test if vertical else None))
        if config.privacy.claims_guarantee:
            self.guard = self._guard(*self._calibrated(prepared))

    def _hold(self, data: UnitData, repeat: int = 0) -> None:
        self.data, self.held = data, repeat
        B = data.blocks[0]
        if B.ndim == 3:  # a provider's rows (1, m, d)
            B = B[0]
        self.rows, self.width = int(B.shape[0]), int(B.shape[1])
        self.test_rows = int(data.test[0].shape[0]) if data.test is not None else 0
        self.max_row_norm = float(row_norms(B).max(initial=0.0))

    def align(self, frame: bytes) -> bytes:
        """One alignment frame of the label holder's (party files): the PSI, the agreed
        order (then its block), every party's widths (then its own calibration)."""
        if self.own is None:
            raise ConfigError(f"party {self.m} reads no party file: nothing to align")
        try:
            reply = self.own.serve(frame, self.cls)
        except DataError as exc:
            raise ConfigError(str(exc)) from None
        if self.own.data is not None and self.data is None:  # (aligned)
            self._hold(self.own.data)
        widths = getattr(self.own, "widths", None)
        if widths is not None and self.guard is None and self.config.privacy.claims_guarantee:
            objective = cast(Objective, self.own.objective)  # (set by the alignment; party_sides leaves it untyped)
            self.guard = self._guard(*self._calibration(self.cls, widths, self.rows, objective))
        return reply

    def _calibrated(self, prepared: Prepared) -> tuple[FloatArray, FloatArray]:
        """``(floor, sensitivity)`` of its releases on this repeat's data, from its own config
        (a provider pre-trains its own D_w on the public rows, as the trainer does)."""
        cls, data = self.cls, prepared.data
        vertical = isinstance(data, VerticalData)
        units = data.blocks if vertical else data.A
        params = dict(self.config.solver.values)
        if not vertical and hasattr(cls, "d_w"):
            try:
                params["D_w"] = cls.d_w(data.public, prepared.objective, params, len(units))[0]
            except ValueError as exc:
                raise ConfigError(f"party {self.m}: {exc}") from None
        return self._calibration(cls, [int(B.shape[-1]) for B in units], self.rows, prepared.objective, params)

    def _calibration(
        self,
        cls: type[Solver],
        widths: list[int],
        N: int | None,
        objective: Objective,
        params: Values | None = None,
    ) -> tuple[FloatArray, FloatArray]:
        """The floor and sensitivity from the party's own config and limits."""
        limits, values = self.pc.limits, dict(self.config.privacy.values)
        accepted = limits.get("neighbours")
        if accepted is not None:
            accepted = [accepted] if isinstance(accepted, str) else list(accepted)
            if values.get("neighbours") not in accepted:
                raise ConfigError(
                    f"party {self.m}: the run's relation privacy.neighbours = "
                    f"{values.get('neighbours')!r} is not one it accepts "
                    f"({', '.join(accepted)})"
                )
        if limits.get("max_epsilon") is None and limits.get("min_sigma") is None:
            raise ConfigError(
                f"party {self.m}: give party.limits.max_epsilon or party.limits.min_sigma (the least noise it accepts)"
            )
        T, k = self.config.solver.epochs, self.m - 1
        assert N is not None, "its rows are held before it calibrates"
        params = dict(self.config.solver.values) if params is None else params
        try:  # (per unit: one value, or one per kind of release the unit makes)
            _, sens = cls.unit_noise(widths, N, objective, params, values, T)
            sens = np.atleast_1d(np.asarray(sens[k], dtype=float))
            floors: list[FloatArray] = []
            if limits.get("max_epsilon") is not None:  # its own calibration at its own epsilon
                sigmas, _ = cls.unit_noise(
                    widths,
                    N,
                    objective,
                    params,
                    {
                        **values,
                        "epsilon": float(limits["max_epsilon"]),
                        **({"sigma": 0.0} if "sigma" in values else {}),
                        **({"epsilon_per_iteration": None} if "epsilon_per_iteration" in values else {}),
                    },
                    T,
                )
                floors.append(np.atleast_1d(np.asarray(sigmas[k], dtype=float)) / sens)
        except (NotImplementedError, ValueError) as exc:
            raise ConfigError(f"party {self.m}: {exc}") from None
        if limits.get("min_sigma") is not None:
            floors.append(float(limits["min_sigma"]) / sens)
        return np.max(floors, axis=0), sens

    def _guard(self, floor: npt.ArrayLike, sens: npt.ArrayLike) -> Guard:
        values, budget = self.config.privacy.values, self.pc.limits.get("budget_epsilon")
        return Guard(
            Path(self.pc.directory),
            self.m,
            floor=floor,
            sensitivity=sens,
            delta=float(values["delta"]),
            accountant=values.get("accountant", "pld"),
            budget=None if budget is None else float(budget),
            deployment=self.deployment,
        )

    # -- the methods -------------------------------------------------------------------
    def close(self, request: bytes, run: str) -> bytes:
        """The coordinator is done; ``finished``: the run is written, so its kept replies
        are let go (a killed coordinator sends nothing: they stay for its resume)."""
        if request == b"finished" and self.guard is not None and run:
            self.guard.forget(run)
        return b""

    def health(self, run: str = "") -> bytes:
        """The party's public facts; ``run``: what its record says of that run too."""
        own = {} if self.own is None else self.own.facts()
        return json.dumps(
            {
                **own,
                "party": self.m,
                "protocol": self.protocol.name,
                "version": self.protocol.version,
                "rows": self.rows,
                "width": self.width,
                "test_rows": self.test_rows,
                "max_row_norm": self.max_row_norm,
                "deployment": self.deployment,
                "digest": self.digest,
                "floor": None if self.guard is None else self.guard.floors.tolist(),
                "limits": self.pc.limits,
                "record": None if self.guard is None else self.guard.summary(run),
            }
        ).encode()

    def open(self, frame: bytes, run: str) -> bytes:
        self.current = (run, 0, None, "")
        return codec.serve(self.host, frame, self._open)

    def _open(self, repeat: int, spec: object) -> object:
        if self.data is None:
            raise ConfigError(f"party {self.m}: its rows are not aligned yet")
        if self.config.privacy.claims_guarantee and self.guard is None:
            raise ConfigError(f"party {self.m}: it has not calibrated its noise (no widths)")
        if self.setting is not None and repeat != self.held:  # its rows of this repeat
            prepared = _prepare(self.setting, self.config, repeat)
            self._hold(prepared.data.cut(self.m - 1, self.m), repeat)
            if self.guard is not None:  # this repeat's schedule (its own public rows' D_w)
                self.guard.recalibrate(*self._calibrated(prepared))
        self.current = (self.current[0], repeat, None, "")
        return self.host.open(self.data, spec, _PartyEnv(_streams(self.config, repeat), self))

    def call(self, frame: bytes, run: str, replay: bool = False) -> bytes:
        """One frame of ``run``; ``replay``: the coordinator resumes the run and says this
        request's release is on the party's record (it is then sent from there, never
        drawn; a request that is not there is refused)."""
        seq, self.replaying, self.admitted, request = None, False, False, ""
        if len(frame) >= codec.HEADER.size:
            _, kind, number, seq = codec.HEADER.unpack_from(frame)
            calls = self.protocol.calls
            # an adopted round, or the journal's bookkeeping: the coordinator's replay
            self.replaying = kind == Frame.ADOPT or (number < len(calls) and calls[number].kind is CONTROL)
            if kind == Frame.REQUEST and number < len(calls) and calls[number].releases:
                request = hashlib.sha256(frame[codec.HEADER.size :]).hexdigest()[:32]
        self.current, self.part = (run, self.current[1], seq, request), 0
        try:
            if (
                request
                and self.guard is not None
                and self.host.side is not None
                and (self.host._last is None or self.host._last[0] != seq)
            ):
                kept = self.guard.recorded(run, self.current[1], request)
                if kept is not None:
                    assert seq is not None  # (a release's request has a header)
                    return self._resend(frame, kept, number, seq)
                if replay:
                    self.guard._refuse(
                        f"the resumed coordinator's request {seq} of run {run} "
                        "is none of the releases on the party's record (its "
                        "replay differs from the run)"
                    )
            reply = codec.serve(self.host, frame, self._open)
            if self.admitted and request and reply[4] == Frame.REPLY:
                assert self.guard is not None  # (a release was admitted by it)
                self.guard.keep(run, self.current[1], request, reply)
            return reply
        except codec.ERRORS as exc:  # (refused before the host: one ERROR frame back)
            return codec.error_frame(exc)
        finally:
            self.replaying = self.admitted = False

    def _resend(self, frame: bytes, kept: bytes, number: int, seq: int) -> bytes:
        """A released reply sent again from the record: the side takes the round from it
        (:meth:`~vfl.core.protocol.Side.adopt`: a deployment's model from the request, a
        simulation's round handled again and checked to the bit), nothing drawn or charged."""
        _, _, _, reader = codec.decode(frame)
        request = reader.message(self.protocol.calls[number].request)
        reply = codec.read(self.protocol, kept, number)
        self.replaying = True
        self.host.adopt(number, request, reply)
        self.host._last = (seq, reply)  # (sent again with this number: the same reply)
        return codec.HEADER.pack(codec.MAGIC, int(Frame.REPLY), number, seq) + kept[codec.HEADER.size :]
