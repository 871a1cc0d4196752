"""The solver plug-in contract: what every registered algorithm declares and does.

An algorithm is a subclass of :class:`Solver`. It declares, as class
attributes, its name, the :class:`Setting` it runs in, its paper
:class:`Reference`, its typed ``[solver]`` and ``[privacy]`` keys
(:class:`~vfl.core.params.Param`), and the metric columns it adds per
iteration. The experiments layer builds its input from the config (a
:class:`VerticalData`, :class:`HorizontalData` or :class:`NetworkData`),
then drives it one iteration at a time:

- :meth:`Solver.step` runs one iteration (this alone is timed) and returns
  its own per-iteration statistics (timings of its phases, counters);
- :meth:`Solver.evaluate` returns the diagnostic metrics of the current
  iterate (objective, residuals, ...), never charged to solver time;
- :meth:`Solver.decision_function` gives margins on held-out data laid out
  as the setting lays it out, from which the runner computes test loss and
  accuracy for every solver alike;
- :meth:`Solver.releases` lists the noisy releases of the last iteration as
  :class:`Release` events (dp-accounting style): the runner composes them
  per protected unit into ``epsilon_tight``. Only sensitivities the code
  *enforces* may appear in a release;
- :meth:`Solver.paper_epsilon` gives the paper's own accounting, shown as
  the paper's claim beside the sound one, never instead of it.

Algorithms are pure computation: no files, no printing, no global state;
every random draw comes from a generator in the :class:`Streams` they are
given. They raise ``ValueError`` for impossible arguments; the runner turns
it into a :class:`~vfl.core.errors.ConfigError`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .params import Param
from .protocol import UnitData
from .records import PrivacyInfo
from .sampling import ExactSampler
from .typed_params import Params, section_model, typed
from .wire import Inference, Wire

__all__ = [
    "PublicMemo",
    "RELEASED",
    "DIAGNOSTIC",
    "ALWAYS_RELEASED",
    "TEST_COLUMNS",
    "column_kinds",
    "Setting",
    "Reference",
    "Release",
    "Streams",
    "Neighbour",
    "label_neighbours",
    "add_noise",
    "add_noise_to_rows",
    "PartyBlocks",
    "Solver",
    "VerticalData",
    "HorizontalData",
    "NetworkData",
    "STREAM_KEYS",
]


class Setting(str, enum.Enum):
    """Who holds what, and who talks to whom."""

    #: parties hold different columns of the same rows; star around the active party (party 1)
    VERTICAL = "vertical"
    #: providers hold different rows; star with a central trainer
    HORIZONTAL = "horizontal"
    #: agents hold different rows on a graph; no centre
    NETWORK = "network"


@dataclass(frozen=True)
class Reference:
    """Where an algorithm comes from, for manifests, summaries and README."""

    paper: str
    algorithm: str
    equations: str = ""
    note: str = ""

    def __str__(self) -> str:
        parts = [self.paper, self.algorithm] + ([f"eqs. {self.equations}"] if self.equations else [])
        return ", ".join(parts)


@dataclass(frozen=True)
class Release:
    """The noisy releases of one kind by some protected units in one iteration.

    Vectorized over units: ``units[k]`` released ``size`` values whose mean,
    under the solver's neighbouring relation, moves by at most
    ``sensitivity[k]`` between neighbouring datasets (l2 for ``"gaussian"``,
    where ``scale`` is the standard deviation per entry; l1 for
    ``"laplace"``, where ``scale`` is the Laplace scale ``b = 1/beta``).

    A sensitivity is given only when the code *enforces* every assumption
    behind it (clipping, projection, normalized rows, bounded gradients);
    otherwise it is NaN, and no guarantee is composed from the release.
    """

    mechanism: str
    units: np.ndarray
    sensitivity: np.ndarray
    scale: np.ndarray
    size: int
    #: drawn by the exact integer sampler on a grid (:mod:`vfl.core.sampling`): the
    #: sensitivity includes the grid's rounding, and the ledger composes the release
    #: with bounds that hold for the discrete mechanism
    exact: bool = False
    #: ``"laplace"`` only: an enforced l2 bound on the same shift of the mean, or None.
    #: Each coordinate is then ``|shift_j| / b``-DP, so the release is ``alpha
    #: ||shift||_2^2 / (2 b^2)``-RDP (Bun and Steinke 2016, Prop. 3.3, summed over the
    #: coordinates), far below the l1 bound's when the shift spreads over coordinates
    l2_sensitivity: np.ndarray | None = None
    #: the relation whose ledger composes it: ``"features"`` (the solver's stated relation,
    #: unit = the party whose block changes) or ``"labels"`` (:data:`~vfl.core.relations.LABELS`,
    #: unit 0 = the label holder); ``"randomized_response"`` releases have sensitivity 1 (one
    #: label flipped) and scale ``1 / epsilon``
    relation: str = "features"

    @property
    def noise_multiplier(self) -> np.ndarray:
        return self.scale / self.sensitivity


def add_noise(mechanism: str, mean: np.ndarray, scale: np.ndarray, rng: np.random.Generator):
    """``mean`` plus noise of per-unit ``scale`` (rows of ``mean`` are units).

    With an exact sampler as ``rng`` (deployment runs), the noise is exact
    discrete noise on a grid (:class:`vfl.core.sampling.ExactSampler`).
    """
    if mechanism == "randomized_response":  # labels +-1, scale 1 / epsilon (one unit)
        from .sampling import randomized_response

        return randomized_response(np.asarray(mean, dtype=float), 1.0 / float(np.ravel(scale)[0]), rng)
    if isinstance(rng, ExactSampler):
        return rng.add(mechanism, mean, scale)
    mean = np.asarray(mean, dtype=float)
    s = (
        np.asarray(scale, dtype=float).reshape((-1,) + (1,) * (mean.ndim - 1))
        if mean.ndim > 1
        else np.asarray(scale, dtype=float)
    )
    if mechanism == "gaussian":
        return mean + s * rng.standard_normal(mean.shape)
    if mechanism == "laplace":
        return mean + s * rng.laplace(0.0, 1.0, mean.shape)
    raise ValueError(f"unknown mechanism {mechanism!r}")


def add_noise_to_rows(mechanism: str, mean: np.ndarray, scale: np.ndarray, rng, rows: slice, total: int) -> np.ndarray:
    """Rows ``rows`` of :func:`add_noise` on a ``(total, ...)`` array whose rows ``rows`` are
    ``mean`` (``scale``: those rows' scales), drawn where those rows are held.

    A seeded stream draws the whole array's noise and keeps these rows, so a group of units
    elsewhere releases the numbers of the whole draw in this process to the bit (the noise of
    a replayable run is public to whoever holds the seed anyway); an exact sampler draws the
    rows' noise alone (its noise is never replayed).
    """
    mean = np.asarray(mean, dtype=float)
    shape = (int(total),) + mean.shape[1:]
    if mechanism == "l2_laplace":
        # density ~ exp(-||y||_2 / scale) per row: a Gamma(d, scale) radius times a uniform
        # direction, drawn whole (numpy's gamma is scale times a standard gamma draw, so the
        # rows' radii do not depend on the other rows' scales)
        direction = rng.standard_normal(shape)
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        radius = rng.gamma(shape=mean.shape[1], scale=1.0, size=int(total))
        return mean + (np.asarray(scale, dtype=float) * radius[rows])[:, None] * direction[rows]
    if isinstance(rng, ExactSampler):
        return rng.add(mechanism, mean, scale)
    s = np.asarray(scale, dtype=float).reshape((-1,) + (1,) * (mean.ndim - 1))
    if mechanism == "gaussian":
        return mean + s * rng.standard_normal(shape)[rows]
    if mechanism == "laplace":
        return mean + s * rng.laplace(0.0, 1.0, shape)[rows]
    raise ValueError(f"unknown mechanism {mechanism!r}")


RELEASED, DIAGNOSTIC = "released", "diagnostic"
#: columns that depend only on public quantities (the iteration, the noise scales and
#: enforced sensitivities that the accounting composes)
#: columns computed from public quantities only: the iteration, the accountant's numbers, and
#: the communication (a function of the protocol and the public sizes N, M, d and the graph)
ALWAYS_RELEASED = (
    "epoch",
    "epsilon_tight",
    "delta_tight",
    "epsilon_paper",
    "delta_paper",
    "delta_labels",
    "messages",
    "bytes",
)
#: columns scored on the test rows (``fnmatch`` patterns)
TEST_COLUMNS = ("test_*",)


def column_kinds(cls, columns, private: bool, *, test_rows_private: bool = False) -> dict[str, str]:
    """``released`` or ``diagnostic`` for each of ``columns`` of a run of ``cls``.

    In a run without privacy everything is exact and nothing is protected:
    every column is ``released``. In a private run a column is released only
    when it is computed from public quantities (:data:`ALWAYS_RELEASED`,
    further claimed epsilons) or the solver declares it in
    ``released_columns``, and not in its ``diagnostic_columns``; training
    losses, objectives, residuals, timings and the rest use exact private
    values and are ``diagnostic``. A column scored on the test rows
    (:data:`TEST_COLUMNS`) is released only when those rows are not records
    the relation protects (``test_rows_private`` False: the published test
    file, a separate test file).
    """
    from fnmatch import fnmatchcase

    if not private:
        return {c: RELEASED for c in columns}
    patterns = (*ALWAYS_RELEASED, "epsilon_*", *cls.released_columns)

    def released(c: str) -> bool:
        return (
            any(fnmatchcase(c, p) for p in patterns)
            and not any(fnmatchcase(c, p) for p in cls.diagnostic_columns)
            and not (test_rows_private and any(fnmatchcase(c, p) for p in TEST_COLUMNS))
        )

    return {c: RELEASED if released(c) else DIAGNOSTIC for c in columns}


#: Integer stream keys (numpy ``SeedSequence`` spawn keys) per purpose. They
#: are part of the records' meaning: changing them changes every replayed run.
STREAM_KEYS = {"noise": 0, "init": 1, "batch": 2, "split": 3, "graph": 4, "x0": 5, "random": 6, "audit": 7, "tuning": 8}


@dataclass
class Streams:
    """Independent random streams of one run (one repeat), derived from its seed.

    Each purpose has its own ``SeedSequence(seed, spawn_key=(key, ...))``
    child, so a change in one (say, batching) does not shift another (the
    noise). Repeat ``r > 0`` appends ``r`` to every key, repeat 0 is the
    single run. Noise streams are replayable from the seed only when
    ``replayable_noise``; otherwise they come from OS entropy, are recorded
    as such, and cannot be replayed from anything in the run directory.
    """

    seed: int
    repeat: int = 0
    replayable_noise: bool = True
    #: a deployment run's noise streams are exact samplers (:mod:`vfl.core.sampling`)
    exact_noise: bool = False
    _entropy: Any = field(default=None, repr=False)

    def _key(self, *key: int) -> tuple[int, ...]:
        return key if self.repeat == 0 else (*key, self.repeat)

    def get(self, purpose: str, *sub: int) -> np.random.Generator:
        """The seeded stream for ``purpose`` (see :data:`STREAM_KEYS`), e.g. ``get("init")``."""
        if purpose == "noise":
            return self.noise(*sub)
        seq = np.random.SeedSequence(self.seed, spawn_key=self._key(STREAM_KEYS[purpose], *sub))
        return np.random.default_rng(seq)

    def noise(self, *unit: int) -> np.random.Generator:
        """The noise stream of one unit (``noise(m)``) or of all units at once (``noise()``)."""
        if self.replayable_noise:
            seq = np.random.SeedSequence(self.seed, spawn_key=self._key(STREAM_KEYS["noise"], *unit))
        elif self.exact_noise:
            return ExactSampler()
        else:
            if self._entropy is None:
                self._entropy = np.random.SeedSequence()  # fresh OS entropy, never recorded
            seq = np.random.SeedSequence(self._entropy.entropy, spawn_key=(*unit,))
        return np.random.default_rng(seq)

    def describe(self) -> dict:
        if self.replayable_noise:
            return {
                "noise": "replayable: SeedSequence(seed, spawn_key=(0, unit...)); this run is a "
                "simulation whose noise anyone with the manifest can regenerate, "
                "drawn by numpy's floating-point sampler: its epsilon is for "
                "analysis only"
            }
        if self.exact_noise:
            return {
                "noise": "exact discrete Gaussian / Laplace on a grid of step scale / 2^20 "
                "(each scale grown by about 1e-4 or less so that the rounding is "
                "charged at the calibrated epsilon), "
                "exact rejection sampling in integer arithmetic on a ChaCha20 "
                "keystream keyed from os.urandom, fixed work per candidate so "
                "that the time does not track the values (vfl.core.sampling): it "
                "cannot be replayed, and it is safe against floating-point "
                "attacks (Mironov 2012) and timing attacks (Jin et al. 2022)"
            }
        return {
            "noise": "OS entropy (numpy SeedSequence() with no seed), not recorded: the noise "
            "cannot be replayed from this run directory"
        }


@dataclass(frozen=True)
class Neighbour:
    """A neighbouring pair for the audit: ``base`` (D) and ``data`` (D'), one unit's data changed.

    ``base`` None means the run's own dataset. A crafted ``base`` (a canary
    record or column written into the run's data) is as much a dataset of the
    relation as the run's own: a guarantee holds for every pair, and the
    worst pairs are what give an audit its power.
    """

    name: str
    kind: str  # "natural" | "candidate" | "adversarial"
    unit: int
    data: Any
    change: str  # what was changed, in words
    base: Any = None
    #: the relation the pair is a neighbour under, whose ledger's claim it audits
    #: (``"features"``: the solver's own; ``"labels"``: one label flipped)
    relation: str = "features"


def label_neighbours(data, rng: np.random.Generator, candidates: int = 4) -> list[Neighbour]:
    """Neighbours under :data:`~vfl.core.relations.LABELS`: a random sample's label flipped
    (natural), and ``candidates`` more of which the audit keeps the one whose releases move
    most (adversarial). Unit 0: the label holder."""
    y = np.asarray(data.y, dtype=float)
    picks = rng.choice(y.size, size=min(y.size, candidates + 1), replace=False)
    out = []
    for n, i in enumerate(picks):
        flipped = y.copy()
        flipped[i] = -flipped[i]
        kind = "natural" if n == 0 else "candidate"
        out.append(
            Neighbour(
                f"label {i} flipped ({kind})",
                kind,
                0,
                VerticalData(data.blocks, flipped),
                f"sample {i}'s label flipped",
                relation="labels",
            )
        )
    return out


@dataclass
class VerticalData:
    """Parties hold columns ``D_m`` of the same N rows; party 1 holds the labels.

    ``units``, when the parties run outside this process (another backend), is
    where they are (:class:`~vfl.core.units.Units`: the solver opens its
    protocol there); the solver then reads no block here (``blocks`` is None),
    except the hub's own when party 1 is the hub (private stacking's active
    party: ``blocks`` is ``[D_1]``).
    """

    blocks: list | None
    y: np.ndarray
    #: the run's :class:`~vfl.core.units.Units` when the parties are elsewhere (None: here)
    units: Any = None

    def cut(self, first: int, stop: int, test=None) -> UnitData:
        """Parties ``first .. stop - 1``: their blocks (and held-out blocks ``test[m]``)."""
        return UnitData(
            first,
            stop,
            len(self.blocks),
            tuple(self.blocks[first:stop]),
            None if test is None else tuple(test[first:stop]),
        )

    def elsewhere(self, units, first: int = 0) -> VerticalData:
        """The data as the coordinator holds it with the parties ``first ..`` on ``units``:
        the labels, and the blocks of the parties before ``first`` (a hub that is a party)."""
        return VerticalData(self.blocks[:first] or None, self.y, units=units)


class PartyBlocks:
    """The runner's hooks for a vertical solver whose party m holds the block ``x[m]`` of the
    model and which counts ``epoch``s (ADMM sharing, FDML SGD): a margin is the sum over
    parties of ``D_m x_m`` (Hu et al. 2019, eq. (1)). The solver's ``parties`` (its seam to
    wherever the parties run) score the test rows: each sends ``B_m x_m``."""

    #: to score a test row, every party sends its share ``B_m x_m`` (one value)
    inference = Inference(
        1,
        "each party holds its columns of a test row and its block x_m of "
        "the model: it sends its share B_m x_m per row to the hub, which "
        "sums them (Hu et al. 2019, eq. (1))",
    )

    @property
    def iteration(self) -> int:
        return self.epoch

    def train_margins(self) -> np.ndarray:
        return self.margins()

    def decision_function(self, test) -> np.ndarray:
        """Margins on held-out rows: the sum of the parties' ``B_m x_m`` (``test``: the
        held-out blocks, where this process holds them)."""
        return np.sum(self.parties.test_products(test), axis=0)


@dataclass
class HorizontalData:
    """Providers hold rows: ``A[i]`` is provider i's ``(m, d)`` sample matrix, ``b[i]`` its labels.

    ``public`` is an optional held-out ``(A0, b0)`` treated as public (e.g.
    DP-ADMM's pre-training samples). ``units``, when the providers run
    outside this process (another backend), is where they are; ``A`` and ``b``
    are then None here.
    """

    A: np.ndarray | None
    b: np.ndarray | None
    public: tuple[np.ndarray, np.ndarray] | None = None
    #: the run's :class:`~vfl.core.units.Units` when the providers are elsewhere
    units: Any = None

    def cut(self, first: int, stop: int, test=None) -> UnitData:
        """Providers ``first .. stop - 1``: their rows and labels."""
        return UnitData(first, stop, len(self.A), (self.A[first:stop], self.b[first:stop]))

    def elsewhere(self, units, first: int = 0) -> HorizontalData:
        """The trainer's data with the providers on ``units``: the public rows alone."""
        return HorizontalData(None, None, public=self.public, units=units)


@dataclass
class NetworkData:
    """Agents hold rows on an undirected connected graph (no centre).

    ``adjacency`` is the symmetric 0/1 ``scipy.sparse`` CSR matrix of the
    graph; ``A[i]``/``b[i]`` agent i's samples; ``x0`` the common start
    ``(N, d)``; ``x_star`` the central optimum of the same objective.
    ``units``, when the agents run outside this process (another backend), is
    where they are; ``A`` and ``b`` are then None here.
    """

    adjacency: Any
    A: np.ndarray | None
    b: np.ndarray | None
    x0: np.ndarray
    x_star: np.ndarray | None = None
    #: the run's :class:`~vfl.core.units.Units` when the agents are elsewhere
    units: Any = None

    def cut(self, first: int, stop: int, test=None) -> UnitData:
        """Agents ``first .. stop - 1``: their samples and labels."""
        return UnitData(first, stop, len(self.A), (self.A[first:stop], self.b[first:stop]))

    def elsewhere(self, units, first: int = 0) -> NetworkData:
        """The solver's data with the agents on ``units``: the graph, ``x^0`` and ``x*``."""
        return NetworkData(self.adjacency, None, None, self.x0, self.x_star, units=units)


class PublicMemo:
    """The last computation on public values, handed back when asked again with equal inputs.

    The audit runs a mechanism on ``D`` and, teacher-forced, on ``D'``: every value both
    compute from the released transcript alone (ADMM sharing's z-update) is the same in
    both, so the audit gives the two solvers one memo (:attr:`Solver.public_memo`) and the
    neighbour reuses the run's result. Inputs are compared exactly (``np.array_equal``), so
    the numbers are the ones the neighbour would compute itself.
    """

    def __init__(self):
        self._key = None
        self._value = None

    def __call__(self, name: str, inputs: tuple, compute):
        if (
            self._key is not None
            and self._key[0] == name
            and len(inputs) == len(self._key[1])
            and all(_same(a, b) for a, b in zip(inputs, self._key[1]))
        ):
            return self._value.copy()
        value = compute()
        self._key = (name, tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in inputs))
        self._value = np.array(value)
        return value


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))
    return a == b


class Solver:
    """Base class of every registered algorithm (see the module docstring)."""

    #: registry name, the value of ``solver.name``
    name: ClassVar[str] = ""
    #: human title for summaries and legends
    title: ClassVar[str] = ""
    setting: ClassVar[Setting]
    reference: ClassVar[Reference]
    #: ``[solver]`` keys besides ``name`` and ``epochs``
    params: ClassVar[tuple[Param, ...]] = ()
    #: ``[privacy]`` keys this solver understands
    privacy_params: ClassVar[tuple[Param, ...]] = ()
    #: metric columns :meth:`step` and :meth:`evaluate` add per iteration
    columns: ClassVar[tuple[str, ...]] = ()
    #: objective regularizers the solver can minimize
    regularizers: ClassVar[tuple[str, ...]] = ("l2sq",)
    #: what one iteration is called in outputs ("epoch", "iteration")
    iteration_name: ClassVar[str] = "iteration"
    #: the published privacy analysis :meth:`paper_epsilon` evaluates, in a few
    #: words (summaries, audit reports); None: the solver has no such claim
    paper_claim: ClassVar[str | None] = None
    #: metric columns (or ``fnmatch`` patterns) that, in a private run, are functions of
    #: what the mechanism releases plus data it does not protect (the test rows, party 1's
    #: own block): the model behind them is one a party could deploy under the guarantee.
    #: Every other value the run writes is diagnostic (see :func:`column_kinds`).
    released_columns: ClassVar[tuple[str, ...]] = ()
    #: why the test metrics are diagnostic when they are (summaries, figures)
    diagnostic_note: ClassVar[str] = ""
    #: columns that would be released by default (:data:`ALWAYS_RELEASED`, ``epsilon_*``)
    #: but that this solver computes from exact private values: a realized, data-dependent
    #: privacy loss as the paper's claim
    diagnostic_columns: ClassVar[tuple[str, ...]] = ()
    #: keys of :meth:`describe` computed from exact private values (a count of clipped rows,
    #: the central optimum's norm): the manifest writes them in its ``diagnostic`` section
    diagnostic_keys: ClassVar[tuple[str, ...]] = ()
    #: where the solver's units can run (``run.backend``): this process, or also "dask"
    #: (Dask workers, :mod:`vfl.experiments.dask_units`)
    backends: ClassVar[tuple[str, ...]] = ("inprocess",)
    #: the protocol its units speak (:class:`~vfl.core.protocol.Protocol`): any backend places
    #: them by its placement and runs its sides (None: the solver holds all its data here)
    protocol: ClassVar[Any] = None
    #: the backends where a run that claims a guarantee can run: its release events are
    #: recorded where the accounting is, and its noise drawn by the units themselves
    accounted_backends: ClassVar[tuple[str, ...]] = ("inprocess",)

    @classmethod
    def typed_params(cls, values) -> Params:
        """``[solver]`` values (a dict, or the record) as this solver's typed, frozen record
        (:func:`~vfl.core.typed_params.params_model` of :attr:`params`), validated."""
        return typed(section_model(cls, "solver"), values)

    @classmethod
    def typed_privacy(cls, values) -> Params:
        """``[privacy]`` values as this solver's typed record (of :attr:`privacy_params`)."""
        return typed(section_model(cls, "privacy"), values)

    @classmethod
    def check_config(cls, params: dict, privacy: dict, iterations: int) -> None:
        """Cross-key checks that need no data (raise ``ValueError``); default: none."""

    @classmethod
    def claims_guarantee(cls, privacy: dict) -> bool:
        """Whether a run with these ``[privacy]`` values claims a DP guarantee.

        Decides the noise source (OS entropy unless ``replayable_noise``) and
        whether epsilons are composed. Default: ``privacy.delta`` is set.
        """
        return getattr(cls.typed_privacy(privacy), "delta", None) is not None

    #: the attacks ``vfl attack`` runs on this solver's messages (:data:`vfl.attacks.ATTACKS`)
    attacks: ClassVar[tuple[str, ...]] = ()
    #: ``view(exchanges, party, N, streams) -> (N, T) array or None``: what passive party
    #: ``party`` (0-based) received that depends on the labels (``label_view``), and what
    #: party 1 received from it (``share_view``), one row per training sample, from a run's
    #: transcript (:mod:`vfl.experiments.transcript`); None: the solver declares none
    label_view: ClassVar[Any] = None
    share_view: ClassVar[Any] = None

    @classmethod
    def claims_label_guarantee(cls, privacy: dict) -> bool:
        """Whether a run with these ``[privacy]`` values claims label DP (the label relation,
        towards the passive parties): ``privacy.label_epsilon`` set, where declared."""
        return getattr(cls.typed_privacy(privacy), "label_epsilon", None) is not None

    @classmethod
    def unit_rows(cls, privacy: dict) -> bool:
        """Whether the data must have rows of unit l2 norm (a sensitivity needs it); default no."""
        return False

    @classmethod
    def build(cls, data, *, objective, params: Params, privacy: Params, streams, iterations) -> Solver:
        """Construct the solver for a run (default: the constructor of the contract).

        ``params`` and ``privacy`` are the typed records of :meth:`typed_params` and
        :meth:`typed_privacy`."""
        return cls(data, objective=objective, params=params, privacy=privacy, streams=streams, iterations=iterations)

    @classmethod
    def unit_noise(cls, widths, N, objective, params: dict, privacy: dict, iterations: int):
        """Each unit's calibrated noise scale and enforced sensitivity of one release, as the
        run's plan calibrates them (a party service checks its requests against these, from
        its own config); default: not declared."""
        raise NotImplementedError(f"{cls.name} declares no calibration a party can check")

    def released_metrics(self) -> dict:
        """What the coordinator computes from released values alone (a deployment run, where
        no unit sends an exact value); default: nothing."""
        return {}

    def initial_metrics(self) -> dict:
        """:meth:`evaluate` at the starting point, row 0 (default: the same)."""
        return self.evaluate()

    # -- the per-iteration protocol ----------------------------------------
    iteration: int = 0

    def step(self) -> dict:
        """Run one iteration; return its own statistics (timed with it)."""
        raise NotImplementedError

    def evaluate(self) -> dict:
        """Diagnostics of the current iterate for :attr:`columns` (not timed)."""
        return {}

    def train_margins(self) -> np.ndarray:
        """Margins of the current model on the training samples (label order of the data)."""
        raise NotImplementedError

    def decision_function(self, test) -> np.ndarray:
        """Margins of the current model on held-out data in the setting's layout."""
        raise NotImplementedError

    def releases(self) -> list[Release]:
        """The noisy releases of the last iteration (empty for non-private runs)."""
        return list(self._releases or ())

    def coef(self) -> np.ndarray | None:
        """The model's coefficients as one vector, for the run's records; None if it has none."""
        return None

    def divergence_hint(self) -> str:
        """Why this solver may have diverged, appended to the error; empty if nothing to say."""
        return ""

    #: the protocol's exchanges, counted where they happen (:class:`~vfl.core.wire.Wire`):
    #: every solver makes one over its units when it is built; the runner takes its counts
    #: after every iteration (metrics.csv ``messages`` and ``bytes``, communication.csv)
    wire: Wire
    #: the release events of the current iteration (see :meth:`begin_releases`)
    _releases: list | None = None

    #: the audit's hook (see :meth:`release`); None in ordinary runs
    observer = None
    #: whether the solver's state can carry the audit's runs as a leading axis: its numeric
    #: kernels broadcast over leading axes, so when the observer returns a release with one
    #: (``(R, ...)``, :mod:`vfl.experiments.audit`), ``R`` runs go through each step together
    audit_batch = False
    #: a :class:`PublicMemo` the audit shares between a run and its teacher-forced neighbour
    #: (None in ordinary runs)
    public_memo = None

    def audit_runs(self) -> int | None:
        """How many runs the audit's observer returns ahead of each release (its ``runs``;
        None: one run, as always outside the audit). The solver's in-process units let
        their messages carry that axis (:data:`~vfl.core.messages.RUNS`)."""
        return getattr(self.observer, "runs", None)

    def release(
        self,
        mean,
        *,
        units,
        scale,
        sensitivity,
        rng,
        mechanism="gaussian",
        size=None,
        l2_sensitivity=None,
        relation: str = "features",
    ):
        """Publish ``mean`` plus noise, and record the :class:`Release` event.

        Every noisy value a solver publishes goes through here, so the white-box
        audit can watch (and, for the neighbouring run, replace) what is
        released: with an ``observer`` set, it is called as
        ``observer(solver, release, mean, rng)`` and returns the released
        values instead. ``mean`` has one row per unit in ``units`` (or is one
        unit's vector when ``units`` is a single int). Call
        :meth:`begin_releases` at the start of each iteration.
        """
        single = np.isscalar(units)
        mean = np.asarray(mean, dtype=float)
        # a unit's values lie along the last axis; leading axes beyond the units' are the
        # audit's runs (the observer returns them batched: :mod:`vfl.experiments.audit`)
        size = int(size if size is not None else mean.shape[-1])
        event = self.record_release(
            units=units,
            scale=scale,
            sensitivity=sensitivity,
            rng=rng,
            mechanism=mechanism,
            size=size,
            l2_sensitivity=l2_sensitivity,
            relation=relation,
        )
        if self.observer is not None:
            return self.observer(self, event, mean, rng)
        return add_noise(mechanism, mean, event.scale[0] if single else event.scale, rng)

    def record_release(
        self,
        *,
        units,
        scale,
        sensitivity,
        rng,
        size: int,
        mechanism="gaussian",
        l2_sensitivity=None,
        relation: str = "features",
    ) -> Release:
        """Record the :class:`Release` event of a release whose noise is drawn elsewhere (by
        the units on their own workers), and return it: its ``scale`` is the one to draw
        with (grown for an exact sampler's grid). :meth:`release` is this plus the draw."""
        units_arr = np.atleast_1d(np.asarray(units, dtype=int))
        scale_arr = np.broadcast_to(np.asarray(scale, dtype=float), units_arr.shape).copy()
        sens_arr = np.broadcast_to(np.asarray(sensitivity, dtype=float), units_arr.shape).copy()
        l2_arr = (
            None
            if l2_sensitivity is None
            else np.broadcast_to(np.asarray(l2_sensitivity, dtype=float), units_arr.shape).copy()
        )
        exact = isinstance(rng, ExactSampler) and self.observer is None
        if exact and mechanism != "randomized_response":  # (RR flips: no grid)
            # Rounding to the grid (step scale / 2^k) is part of the query and adds
            # c * scale to the sensitivity; the scale grows by 1 / (1 - c scale / Delta)
            # so that sensitivity / scale, hence epsilon, stays what was calibrated.
            from .sampling import grid_slack

            c = grid_slack(mechanism, 1.0, size)
            grow = c * scale_arr / sens_arr
            ok = np.isfinite(grow) & (grow < 0.5)
            scale_arr = np.where(ok, scale_arr / np.where(ok, 1.0 - grow, 1.0), scale_arr)
            sens_arr = sens_arr + c * scale_arr
            if l2_arr is not None:  # the same rounding, measured in l2
                l2_arr = l2_arr + grid_slack("gaussian", 1.0, size) * scale_arr
        event = Release(mechanism, units_arr, sens_arr, scale_arr, int(size), exact, l2_arr, relation)
        if self._releases is None:
            self._releases = []
        self._releases.append(event)
        return event

    def begin_releases(self) -> None:
        """Forget the previous iteration's release events."""
        self._releases = []

    def planned_releases(self) -> list[Release] | None:
        """What the next iteration will release, if known in advance (for privacy budgets)."""
        return None

    def paper_epsilon(self) -> tuple[float, float] | None:
        """The paper's own (epsilon, delta) after the iterations so far (:attr:`paper_claim`), or None."""
        return None

    @classmethod
    def neighbours(cls, data, privacy: dict, rng: np.random.Generator) -> list[Neighbour]:
        """Neighbouring datasets of ``data`` under this solver's relation, for the audit.

        A few natural pairs (changes a real dataset could show) and
        adversarial ones (changes that move the releases the most that the
        relation allows). Solvers without a stated relation audit nothing.
        """
        raise NotImplementedError(f"{cls.name} states no neighbouring relation to audit")

    @classmethod
    def protected_replaced(cls, data, privacy: dict, rng: np.random.Generator):
        """``data`` with every value the relation protects replaced by other values it allows.

        A run on it, teacher-forced to release what the run on ``data``
        released, must write every value not marked diagnostic bit for bit:
        the check that they depend on the releases alone
        (:mod:`vfl.experiments.released`). Every solver that can claim a
        guarantee implements it.
        """
        raise NotImplementedError(f"{cls.name} states no protected values to replace")

    def other_claims(self) -> dict[str, tuple[float, float]]:
        """Further epsilons from the paper's analysis (``name -> (epsilon, delta)``), claims only.

        Recorded as ``epsilon_<name>`` columns and audited like the others.
        """
        return {}

    def privacy_info(self) -> PrivacyInfo | None:
        """What the manifest says about privacy (a :class:`~vfl.core.records.PrivacyInfo`);
        None for a solver without noise.

        Fields the summary reads, the same for every solver: ``mode``,
        ``dp_guarantee``, ``neighbouring`` (the relation, required when a
        guarantee is claimed), ``labels`` (what the relation leaves
        unprotected), ``mechanism``, ``enforced``, ``note`` or ``warning``,
        ``other_claims_meaning``. The runner adds ``noise`` (where it came from).
        """
        return None

    def describe(self) -> dict:
        """Algorithm details for the manifest (beyond the validated parameters).

        A ``warnings`` list, if present, is printed in the run's summary.
        """
        return {}
