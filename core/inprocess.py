"""The units in this process: the default backend of the unit transport (:mod:`.units`).

Each host's side holds the solver's own arrays; no message is copied or encoded, and every
release goes through the solver's (:class:`~.host.LocalEnv`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .arrays import FloatArray
from .host import Host
from .protocol import PROTOCOL, RUNS, Call, Env, Protocol, Side, UnitData, validate
from .units import Messages, Session, Units

__all__ = ["InProcessUnits"]


class InProcessUnits(Units):
    """The units in this process (the default backend): each host's side holds the
    solver's own arrays, no message is copied or encoded, and every release goes through
    the solver's ``release`` (:class:`LocalEnv`). ``cut(first, stop)`` gives the
    :class:`~.protocol.UnitData` of units ``first .. stop - 1`` of ``total``."""

    records = True

    def __init__(self, cut: Callable[[int, int], UnitData], total: int, env: Env):
        self.cut, self.total, self.env = cut, int(total), env

    @classmethod
    def blocks(cls, blocks: Sequence[Any], env: Env, test: Sequence[Any] | None = None) -> InProcessUnits:
        """A vertical run's parties: party m holds ``blocks[m]`` (and ``test[m]``)."""
        M = len(blocks)
        return cls(
            lambda a, b: UnitData(a, b, M, tuple(blocks[a:b]), None if test is None else tuple(test[a:b])), M, env
        )

    @classmethod
    def rows(cls, A: FloatArray, b: FloatArray, env: Env) -> InProcessUnits:
        """Providers or agents: unit i holds the rows ``A[i]``, ``b[i]``."""
        N = len(A)
        return cls(lambda a, z: UnitData(a, z, N, (A[a:z], b[a:z])), N, env)

    def hosts(self, protocol: Protocol) -> list[tuple[int, int]]:
        first = protocol.placement.first
        if protocol.placement.grouped:
            return [(first, self.total)]
        return [(m, m + 1) for m in range(first, self.total)]

    @property
    def runs(self) -> int | None:  # type: ignore[override]  # (the base's: None, a class attribute)
        """The audit's runs, when it drives the mechanism here (:attr:`LocalEnv.runs`)."""
        return getattr(self.env, "runs", None)

    def sides(self, session: Session) -> list[Side]:
        return [_side(h) for h in _hosts(session)]

    def _open(self, session: Session, k: int) -> object:
        if session.transport is None:
            session.transport = [Host(session.protocol) for _ in range(session.n)]
        return session.transport[k].open(self.cut(*session.hosts[k]), session.spec, self.env)

    def _send(
        self, session: Session, call: Call, requests: Messages, seqs: dict[int, int] | None
    ) -> tuple[Messages, Exception | None]:
        hosts, out = _hosts(session), {}
        checked: dict[int, dict[str, int]] = {}  # id(request) -> the sizes it was validated against
        index = session.numbers[call]
        runs = self.runs
        if runs is not None:  # the audit's runs, validated here (a Host has no notion of them)
            for k, request in requests.items():
                dims = _side(hosts[k]).dims
                validate(
                    request, call.request, {**dims, RUNS: runs}, finite=call.kind is PROTOCOL, where=(call.name, ": ")
                )
                out[k] = hosts[k].handle(index, request, checked=dims)
            return out, None
        for k, request in requests.items():
            out[k] = hosts[k].handle(index, request, checked=checked.get(id(request)))
            checked[id(request)] = _side(hosts[k]).dims
        return out, None

    def _adopt(self, session: Session, k: int, call: Call, request: object, reply: object) -> None:
        _hosts(session)[k].adopt(call, request, reply)

    def _provide_test(self, session: Session, test: Any) -> None:
        if test is None:
            return
        for (a, b), host in zip(session.hosts, _hosts(session)):
            _side(host).data.test = tuple(test[a:b])


def _hosts(session: Session) -> list[Host]:
    """The in-process hosts of ``session`` (opened with it)."""
    assert session.transport is not None, "the session's hosts are opened with it"
    return session.transport


def _side(host: Host) -> Side:
    """The side ``host`` opened (every host of an open session has one)."""
    assert host.side is not None, "a host of an open session has its side"
    return host.side
