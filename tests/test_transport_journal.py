"""The unit transport's journal, by hand (vfl.core.units): units lost before, during and
after a round, replays, and a protocol that cannot rebuild, on tests/test_transport.py's
toy protocol.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_transport import TOY, Gradient, ToySide, ToySpec, UnitDataFor, Width

from vfl.core.errors import PartyLostError
from vfl.core.host import Host, LocalEnv
from vfl.core.inprocess import InProcessUnits
from vfl.core.protocol import DIAGNOSTIC, Protocol, Recovery


# ------------------------------------------------------------ the journal, by hand --
class Flaky(InProcessUnits):
    """In-process hosts whose ``lose`` ones are lost at their next message (before or after
    handling it): what a backend on other machines meets."""

    journals = True

    def __init__(self, blocks, replayable=True):
        self.streams = {}
        env = LocalEnv(noise=lambda m: self.streams.setdefault(m, np.random.default_rng(m)))
        env.replayable = replayable
        env.release = lambda mean, *, scale, rng, **_: mean + scale * rng.standard_normal(mean.shape)
        super().__init__(lambda a, b: UnitDataFor(blocks, a, b), len(blocks), env)
        self.replayable = replayable
        self.lose: dict[int, str] = {}  # host -> "before" / "after" it handles the message
        self.sent: list[tuple] = []  # (host, call) of every message handled
        self.recoveries = []

    def _send(self, session, call, requests, seqs):
        got, failure = {}, None
        for k, request in requests.items():
            when = self.lose.get(k)
            if when == "before":
                failure = failure or ConnectionError(f"host {k} lost")
                continue
            self.sent.append((k, call.name))
            reply = session.transport[k].handle(call, request, seqs[k])
            if when == "after":  # handled there, its reply lost with it
                failure = failure or ConnectionError(f"host {k} lost")
                continue
            got[k] = reply
        return got, failure

    def _lost(self, session, failure):
        return sorted(self.lose)

    def _replace(self, session, k, lost_at):
        self.lose.pop(k)
        self.streams.pop(session.hosts[k][0])  # a new process: its stream from the seed again
        session.transport[k] = Host(session.protocol)
        return "elsewhere"

    def _adopt(self, session, k, call, request, reply):
        self.sent.append((k, f"adopt {call.name}"))
        super()._adopt(session, k, call, request, reply)

    def _recovered(self, session, record):
        self.recoveries.append(record)


def _toy_units(replayable=True):
    rng = np.random.default_rng(0)
    return Flaky([rng.normal(size=(5, 2)) for _ in range(3)], replayable)


def _step(session, g, scale=0.5):
    replies = session.round("step", {k: Gradient(g=g, scale=scale) for k in range(session.n)})
    return np.array([replies[k].u for k in range(session.n)])


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_round_runs_again_only_where_no_reply_arrived(when):
    """Host 1 is lost in round 2, before or after handling it: the others' replies stand (they
    are not asked again), host 1 is rebuilt from its journal (round 1's release adopted,
    checked equal) and asked round 2 again; the numbers are those of an undisturbed run."""
    g = np.linspace(-1, 1, 5)
    calm = _toy_units().open(TOY, ToySpec(eta=0.1))
    want = [_step(calm, g), _step(calm, 2 * g)]
    units = _toy_units()
    session = units.open(TOY, ToySpec(eta=0.1))
    got = [_step(session, g)]
    units.lose, units.sent = {1: when}, []
    got.append(_step(session, 2 * g))
    np.testing.assert_array_equal(got, want)
    rounds = [s[0] for s in units.sent if s[1] == "step"]
    assert rounds == ([0, 2, 1] if when == "before" else [0, 1, 2, 1])
    assert (1, "adopt step") in units.sent
    assert units.recoveries == [
        {"unit": "party 2", "repeat": 0, "epoch": 2, "lost": "this process", "resumed_on": "elsewhere", "first": 1}
    ]
    assert session._flight is None  # the round's replies are forgotten with it


def test_a_diagnostic_that_meets_a_lost_unit_never_replays_a_completed_round():
    """The bug of issue 39: after round 2 completed, host 0 is lost before a diagnostic. It is
    rebuilt from its journal alone (rounds 1 and 2 adopted), the diagnostic asked again: its
    model is the undisturbed one, and the next round continues from there."""
    g = np.linspace(-1, 1, 5)
    calm = _toy_units().open(TOY, ToySpec(eta=0.1))
    _step(calm, g)
    _step(calm, g)
    calm_models = [m.x for m in calm.ask("model")]
    want = _step(calm, g)
    units = _toy_units()
    session = units.open(TOY, ToySpec(eta=0.1))
    _step(session, g)
    _step(session, g)
    units.lose, units.sent = {0: "before"}, []
    models = session.ask("model")
    assert [s for s in units.sent if s[0] == 0] == [(0, "adopt step"), (0, "adopt step"), (0, "model")]
    for got, model in zip(models, calm_models):
        np.testing.assert_array_equal(got.x, model)
    np.testing.assert_array_equal(_step(session, g), want)
    assert session.payload[DIAGNOSTIC] == [16, 16, 16]  # three models of 2 values


def test_a_replay_that_releases_other_values_stops_the_run_naming_the_unit():
    g = np.linspace(-1, 1, 5)
    units = _toy_units()
    session = units.open(TOY, ToySpec(eta=0.1))
    _step(session, g)
    _step(session, g)
    entry = session.journal[2][1]
    entry.reply.u[0] = np.nextafter(entry.reply.u[0], np.inf)  # one bit of one release
    units.lose = {2: "before"}
    with pytest.raises(
        PartyLostError,
        match=r"^party 3: rebuilt on worker elsewhere, its "
        r"release of epoch 2 differs from the one "
        r"received, so the run stops$",
    ):
        session.ask("model")


def test_a_protocol_that_cannot_rebuild_stops_the_run_in_one_line():
    never = Protocol(
        "toy",
        1,
        spec=ToySpec,
        side=ToySide,
        opened=Width,
        calls=TOY.calls,
        iteration="step",
        recovery=Recovery(
            not_rebuilt=lambda replayable, entries: (
                None if replayable else "{its} noise cannot be drawn again, so the run stops"
            )
        ),
    )
    units = _toy_units(replayable=False)
    session = units.open(never, ToySpec(eta=0.1))
    _step(session, np.ones(5))
    units.lose = {1: "after"}
    with pytest.raises(
        PartyLostError,
        match=r"^party 2: its worker this process was lost at "
        r"epoch 2; its noise cannot be drawn again, so "
        r"the run stops$",
    ):
        _step(session, np.ones(5))
