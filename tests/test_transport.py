"""The one unit transport (vfl.core.protocol, vfl.core.units, vfl.core.codec): a toy solver
that declares its protocol here and runs on every backend with one registry line, the
typed layer refusing what its protocol does not declare (the journal's faults, by hand, are in
test_transport_journal.py).

The toy: party m holds its block ``D_m`` and its model ``x_m``; each epoch the coordinator
sends every party the loss derivatives ``g`` (N values), each steps ``x_m -= eta D_m^T g``
and sends back its margins ``D_m x_m`` (plus Gaussian noise of the request's scale, drawn
from its own stream: a release).
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from cli_helpers import SMALL

from vfl.core import codec
from vfl.core.codec import Frame
from vfl.core.host import Host, LocalEnv
from vfl.core.inprocess import InProcessUnits
from vfl.core.layouts import PartyBlocks
from vfl.core.params import Param
from vfl.core.protocol import (
    CONTROL,
    DIAGNOSTIC,
    INFERENCE,
    PROTOCOL,
    Call,
    Empty,
    Protocol,
    ProtocolError,
    Side,
    array,
    handles,
    message,
    nbytes,
    same,
    scalar,
    validate,
    values,
)
from vfl.core.solver import Reference, Setting, Solver
from vfl.core.wire import Wire


# ------------------------------------------------------------------ the toy's protocol --
@message
class ToySpec:
    eta = scalar(float)


@message
class Gradient:
    g = array("f8", "N")
    scale = scalar(float)


@message
class Margins:
    u = array("f8", "N")


@message
class Model:
    x = array("f8", "d")


@message
class Scores:
    u = array("f8", "T")


@message
class Width:
    d = scalar(int)


class ToySide(Side):
    def __init__(self, data, spec, env):
        super().__init__(data, spec, env)
        (self.D,) = data.blocks
        self.m = data.first
        self.x = np.zeros(self.D.shape[1])
        self.rng = env.noise(self.m)
        self.dims = {"N": self.D.shape[0]}

    def opened(self):
        return Width(d=self.D.shape[1])

    @handles("step")
    def step(self, req: Gradient) -> Margins:
        self.x = self.x - self.spec.eta * (self.D.T @ req.g)
        u = self.D @ self.x
        if req.scale > 0:
            u = self.env.release(u, units=self.m, scale=req.scale, sensitivity=np.nan, rng=self.rng)
        return Margins(u=u)

    @handles("model")
    def model(self, req: Empty) -> Model:
        return Model(x=self.x)

    @handles("score")
    def score(self, req: Empty) -> Scores:
        return Scores(u=np.asarray(self.data.test[0] @ self.x, dtype=float))


TOY = Protocol(
    "toy",
    1,
    spec=ToySpec,
    side=ToySide,
    opened=Width,
    iteration="step",
    calls=(
        Call("step", Gradient, Margins, releases=True),
        Call("model", Empty, Model, DIAGNOSTIC),
        Call("score", Empty, Scores, INFERENCE),
    ),
)


class ToySolver(PartyBlocks, Solver):
    """Gradient descent on the logistic loss, the parties' margins released with noise."""

    name = "toy_gd"
    title = "toy"
    setting = Setting.VERTICAL
    reference = Reference("tests/test_transport.py", "gradient descent over the parties")
    protocol = TOY
    backends = ("inprocess", "dask", "services")
    iteration_name = "epoch"
    params = (Param("eta", float, 1e-3, "step size", low=0),)
    privacy_params = (Param("sigma", float, 0.0, "noise on the margins (simulation)", low=0),)
    columns = ("objective",)

    @classmethod
    def build(cls, data, *, objective, params, privacy, streams, iterations):
        return cls(data, objective, params.eta, privacy.sigma, streams)

    def __init__(self, data, objective, eta, sigma, streams):
        self.y, self.objective, self.sigma, self.streams = data.y, objective, sigma, streams
        units = data.units or InProcessUnits.blocks(data.blocks, LocalEnv(release=self.release, noise=streams.noise))
        self.session = units.open(TOY, ToySpec(eta=eta), streams.repeat)
        self.wire = Wire(self.session.n)
        self.u = np.zeros(len(self.y))
        self.epoch = 0

    def step(self) -> dict:
        self.begin_releases()
        g = -self.y / (1.0 + np.exp(self.y * self.u))
        scales = np.full(self.session.n, self.sigma)
        if self.sigma > 0 and not self.session.records:  # they draw: the events recorded here
            scales = np.array(
                [
                    self.record_release(
                        units=m, scale=self.sigma, sensitivity=np.nan, rng=self.streams.noise(m), size=len(g)
                    ).scale[0]
                    for m in range(self.session.n)
                ]
            )
        replies = self.session.round("step", {k: Gradient(g=g, scale=float(scales[k])) for k in range(self.session.n)})
        self.u = np.sum([replies[k].u for k in range(self.session.n)], axis=0)
        self.epoch += 1
        self.wire.gather(len(g))
        self.wire.scatter(len(g))
        return {}

    @property
    def parties(self):
        return self

    def test_products(self, test):
        return [r.u for r in self.session.score("score", test=test)]

    def models(self) -> list:
        return [r.x for r in self.session.ask("model")]

    def evaluate(self) -> dict:
        return {"objective": self.objective.value_from_margins(self.u, self.y, self.models())}

    def train_margins(self):
        return self.u

    def coef(self):
        return np.concatenate(self.models())


@pytest.fixture
def toy(monkeypatch):
    """The toy's one registry line."""

    monkeypatch.setitem(registry.SOLVERS, "toy_gd", "test_transport:ToySolver")


def _toy_config(tmp_path, *overrides, epochs=6):
    path = tmp_path / "toy.toml"
    path.write_text(SMALL.format(epochs=epochs).replace("[solver]", '[solver]\nname = "toy_gd"'))
    return load_config(path, list(overrides))


def _same_numbers(remote, local) -> None:
    timing = [c for c in local.metrics.columns if c.endswith("time_s")]
    pd.testing.assert_frame_equal(
        remote.metrics.drop(columns=timing), local.metrics.drop(columns=timing), check_exact=True
    )
    np.testing.assert_array_equal(remote.coef, local.coef)
    pd.testing.assert_frame_equal(remote.communication, local.communication)


def test_the_toy_runs_in_process(tmp_path, toy):
    quiet = run_experiment(_toy_config(tmp_path), with_baselines=False)
    noisy = run_experiment(_toy_config(tmp_path, "privacy.sigma=0.5"), with_baselines=False)
    assert quiet.metrics["objective"].iloc[-1] < quiet.metrics["objective"].iloc[0]
    assert not np.array_equal(noisy.coef, quiet.coef)  # the releases' noise steered it
    again = run_experiment(_toy_config(tmp_path, "privacy.sigma=0.5"), with_baselines=False)
    np.testing.assert_array_equal(again.coef, noisy.coef)  # the party's seeded stream


from test_services import _remote, certs, parties  # noqa: E402, F401  (the services' fixtures)

from vfl.core.protocol import UnitData  # noqa: E402
from vfl.experiments import registry  # noqa: E402
from vfl.experiments.config import load_config  # noqa: E402
from vfl.experiments.run_plan import plan_run  # noqa: E402
from vfl.experiments.runner import run_experiment  # noqa: E402
from vfl.experiments.transport.dask_units import dask_backend  # noqa: E402


def test_the_toy_runs_as_party_services_with_the_in_process_numbers(tmp_path, toy, certs, parties):
    """The third backend: each party its own gRPC service over mutual TLS, the toy's
    protocol declared once (no line for it outside this file but the registry's)."""
    pytest.importorskip("grpc")

    config = _toy_config(tmp_path, "privacy.sigma=0.5", "privacy.replayable_noise=true", epochs=3)
    p = parties(config)
    remote = _remote(p.coordinator(config))
    local = run_experiment(config, with_baselines=False)
    timing = [c for c in local.metrics.columns if c.endswith("time_s")]
    pd.testing.assert_frame_equal(
        remote.metrics.drop(columns=timing), local.metrics.drop(columns=timing), check_exact=True
    )
    assert remote.manifest.dump()["backend"]["backend"] == "services"


# ------------------------------------------------------------------ the typed layer --
def _host(blocks=None):
    blocks = blocks or [np.arange(6.0).reshape(3, 2)]
    units = InProcessUnits.blocks(blocks, LocalEnv(noise=lambda m: np.random.default_rng(m)), test=[np.ones((4, 2))])
    session = units.open(TOY, ToySpec(eta=0.1))
    return session, session.units


@pytest.mark.parametrize(
    "request_, message_",
    [
        (Empty(), "expected a Gradient message, got Empty"),
        (Gradient(g=np.zeros(3, dtype=np.int64), scale=0.0), "Gradient.g must have dtype float64"),
        (Gradient(g=np.zeros(4), scale=0.0), "Gradient.g must have shape ('N',) with N = 3"),
        (Gradient(g=np.zeros((3, 1)), scale=0.0), "Gradient.g must have 1 dimension(s)"),
        (Gradient(g=np.array([0.0, np.nan, 1.0]), scale=0.0), "Gradient.g holds non-finite values"),
        (Gradient(g=np.zeros(3), scale=np.inf), "Gradient.scale is not finite"),
        (Gradient(g=[0.0, 0.0, 0.0], scale=0.0), "Gradient.g must be a numpy array of float64"),
        (Gradient(g=np.zeros(3), scale="0"), "Gradient.scale must be a float, got str"),
    ],
)
def test_a_request_of_the_wrong_type_shape_dtype_or_a_nan_is_refused(request_, message_):
    session, _ = _host()
    side = session.sides[0]
    with pytest.raises(ProtocolError, match=message_.replace("(", r"\(").replace(")", r"\)")):
        session.transport[0].handle(TOY.call("step"), request_)
    assert not side.x.any()  # nothing handled


def test_an_undeclared_call_or_a_pickled_object_is_refused():
    session, _ = _host()
    host, side = session.transport[0], session.sides[0]
    for name in ("__getattribute__", "x", "step_", "D"):
        with pytest.raises(ProtocolError, match=f"protocol toy declares no call '{name}'"):
            TOY.call(name)
    with pytest.raises(ProtocolError, match="declares no call number 3"):
        host.handle(3, Empty())
    foreign = Call("step", Gradient, Margins)  # a call of the same name, not the protocol's
    with pytest.raises(ProtocolError, match="is not protocol toy's call"):
        host.handle(foreign, Gradient(g=np.zeros(3), scale=0.0))
    # over the wire: a method name, a pickle and a frame naming call 7 are refused as data
    for frame in (
        b"__getattribute__",
        pickle.dumps(("D",)),
        pickle.dumps(Gradient(g=np.ones(3), scale=0.0)),
        codec.HEADER.pack(b"VFL1", int(Frame.REQUEST), 7, 1),
    ):
        with pytest.raises(ProtocolError):
            codec.read(TOY, codec.serve(host, frame, lambda r, s: None))
    assert not side.x.any()


def test_a_deployments_unit_answers_no_diagnostic():
    host = Host(TOY, simulation=False)
    host.open(UnitDataFor([np.ones((3, 2))], 0, 1), ToySpec(eta=0.1), LocalEnv(noise=lambda m: None))
    with pytest.raises(ProtocolError, match="model: a deployment's unit answers no diagnostic"):
        host.handle(TOY.index("model"), Empty())
    assert host.handle(TOY.index("score"), Empty()).u.shape == (2,)  # scoring is released


def test_frames_round_trip_and_count_payload_apart_from_framing():
    rng = np.random.default_rng(0)

    @message
    class Everything:
        a = array("f8", "n", 2)
        b = array("i8", "n", optional=True)
        c = array("u8", 3)
        flag = scalar(bool)
        k = scalar(int)
        word = scalar(str, choices=("up", "down"))
        z = scalar(float, optional=True)
        named = values()

    msg = Everything(
        a=rng.normal(size=(4, 2)),
        c=np.arange(3, dtype=np.uint64),
        flag=True,
        k=-7,
        word="down",
        named={"eta": 0.5, "steps": np.array([1, 2]), "laplace": False, "mech": "gaussian", "J": None},
    )
    frame = codec.encode(Frame.REQUEST, 0, 9, msg)
    kind, call, seq, reader = codec.decode(frame)
    back = reader.message(Everything)
    reader.end()
    assert (kind, call, seq) == (Frame.REQUEST, 0, 9) and same(back, msg)
    validate(back, Everything)
    # the payload: 8 float64 + 3 uint64 + a bool + an int + 4 bytes of "down" + the named
    # values (a float, two int64, a bool, 8 bytes of "gaussian")
    assert nbytes(msg) == 64 + 24 + 1 + 8 + 4 + 8 + 16 + 1 + 8
    assert len(frame) > nbytes(msg)
    with pytest.raises(ProtocolError, match="truncated"):
        codec.decode(frame[:-3])[3].message(Everything)
    with pytest.raises(ProtocolError, match="bytes after the message"):
        reader = codec.decode(frame + b"\x00")[3]
        reader.message(Everything)
        reader.end()


# ----------------------------------------------------------------------- on Dask --
distributed = pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def cluster():
    """Three threaded workers: two for the toy's parties, one to take over a lost one."""
    with distributed.LocalCluster(
        n_workers=3, threads_per_worker=1, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address=None
    ) as c:
        yield c


def _on_dask(config, cluster, on_epoch=None, during=None):
    """``config`` run with its units on ``cluster``; ``during(backend, kind)`` is called before
    every exchange of that kind (to kill a worker there). Returns the result and the backend."""

    with dask_backend(config, cluster.scheduler_address, None) as backend:
        if during is not None:
            send, open_ = backend._send, backend._open

            def watched(session, call, requests, seqs):
                during(backend, call.kind)
                return send(session, call, requests, seqs)

            def opening(session, k):
                during(backend, CONTROL)
                return open_(session, k)

            backend._send, backend._open = watched, opening
        plan = plan_run(config, None, backend)
        result = run_experiment(config, plan=plan, with_baselines=False, on_epoch=on_epoch)
    return result, backend


@pytest.mark.parametrize("overrides", [[], ["privacy.sigma=0.5", "run.repeats=2"]])
def test_the_toy_runs_on_dask_with_the_in_process_numbers(tmp_path, toy, cluster, overrides):
    local = run_experiment(_toy_config(tmp_path, *overrides), with_baselines=False)
    remote, backend = _on_dask(_toy_config(tmp_path, *overrides, "run.backend=dask"), cluster)
    _same_numbers(remote, local)
    assert list(remote.manifest.dump()["backend"]["parties"]) == ["party 1", "party 2"]
    phases = backend.phases()
    repeats = remote.config.run.repeats
    # each epoch: N = 300 derivatives and a scale down, 300 margins up, per party
    assert phases["training"]["payload_bytes"] == 6 * 2 * (300 * 8 + 8 + 300 * 8) * repeats
    # the models (d = 6 + 7: party 1 holds the intercept) for rows 0-6, and the last coef
    assert phases["diagnostics"]["payload_bytes"] == (7 * repeats + 1) * (6 + 7) * 8
    # the 100 test rows scored for each row of metrics.csv
    assert phases["inference"]["payload_bytes"] == 7 * 2 * 100 * 8 * repeats
    assert phases["training"]["tcp_bytes"] > phases["training"]["payload_bytes"]
    assert all(p["framing_bytes"] > 0 for p in phases.values())
    written = remote.manifest.dump()["communication"]["transport"]["phases"]
    assert written["training"] == phases["training"]  # (the model was asked for after it)


def _kill(cluster, address: str) -> None:
    """Close the threaded worker at ``address`` (its actors die with it)."""
    (worker,) = [w for w in cluster.workers.values() if w.address == address]
    cluster.sync(worker.close)


def _kill_during(cluster, kind, epoch, slot=0):
    """A ``during`` hook that kills the worker of ``slot`` before the first ``kind`` call after
    row ``epoch`` (and never again)."""
    state = {"row": -1, "done": False}

    def on_epoch(row):
        state["row"] = row["epoch"]

    def during(backend, now):
        if not state["done"] and now is kind and state["row"] >= epoch:
            state["done"] = True
            _kill(cluster, backend.slots[slot].worker)

    return on_epoch, during


@pytest.mark.parametrize("kind", [DIAGNOSTIC, INFERENCE, CONTROL, PROTOCOL])
def test_a_unit_lost_in_a_diagnostic_call_is_rebuilt_to_the_same_numbers(tmp_path, toy, kind):
    """Issue 39's reproducer: eval_every = 1, noise on, a unit's worker lost before a
    diagnostic call (or the scoring of the test rows, a repeat's open, a round): the unit is
    rebuilt from its journal (every completed round's release adopted, each checked equal
    as its noise is replayable) and the run ends with the undisturbed numbers, to the bit."""

    over = ["privacy.sigma=0.5", "run.eval_every=1", "run.repeats=2", "run.party_wait=30"]
    local = run_experiment(_toy_config(tmp_path, *over), with_baselines=False)
    with distributed.LocalCluster(
        n_workers=3, threads_per_worker=1, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        on_epoch, during = _kill_during(cluster, kind, 3)
        remote, backend = _on_dask(
            _toy_config(tmp_path, *over, "run.backend=dask"), cluster, on_epoch=on_epoch, during=during
        )
    _same_numbers(remote, local)
    (fault,) = backend.recoveries
    assert fault["party"] == 1 and fault["unit"] == "party 1"


def UnitDataFor(blocks, a, b):
    return UnitData(a, b, len(blocks), tuple(blocks[a:b]), (np.ones((2, 2)),) * (b - a))
