"""The solver plug-in contract: what every registered algorithm declares and does.

An algorithm is a subclass of :class:`Solver`. It declares, as class
attributes, its name, the :class:`Setting` it runs in, its paper
:class:`Reference`, its typed ``[solver]`` and ``[privacy]`` keys
(:class:`~vfl.core.params.Param`), and the metric columns it adds per
iteration. The experiments layer builds its input from the config (a
:class:`~vfl.core.layouts.VerticalData`, :class:`~vfl.core.layouts.HorizontalData` or
:class:`~vfl.core.layouts.NetworkData`: :mod:`vfl.core.layouts`), then drives it one
iteration at a time:

- :meth:`Solver.step` runs one iteration (this alone is timed) and returns
  its own per-iteration statistics (timings of its phases, counters);
- :meth:`Solver.evaluate` returns the diagnostic metrics of the current
  iterate (objective, residuals, ...), never charged to solver time;
- :meth:`Solver.decision_function` gives margins on held-out data laid out
  as the setting lays it out, from which the runner computes test loss and
  accuracy for every solver alike;
- :meth:`Solver.releases` lists the noisy releases of the last iteration as
  :class:`~vfl.core.releases.Release` events (dp-accounting style): the runner composes them
  per protected unit into ``epsilon_tight``. Only sensitivities the code
  *enforces* may appear in a release;
- :meth:`Solver.paper_epsilon` gives the paper's own accounting, shown as
  the paper's claim beside the sound one, never instead of it.

Algorithms are pure computation: no files, no printing, no global state;
every random draw comes from a generator in the :class:`~vfl.core.streams.Streams` they are
given. They raise ``ValueError`` for impossible arguments; the runner turns
it into a :class:`~vfl.core.errors.ConfigError`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from .arrays import FloatArray
from .layouts import HorizontalData, NetworkData, VerticalData
from .neighbours import Neighbour
from .params import Param
from .releases import Release, add_noise
from .sampling import ExactSampler, grid_slack
from .typed_params import Params, section_model, typed
from .typed_records import PrivacyInfo
from .wire import Wire

if TYPE_CHECKING:
    from .objective import Objective
    from .streams import Streams

__all__ = ["Data", "Metrics", "Observer", "PublicMemo", "Reference", "Setting", "Solver", "Values"]

#: a solver's input, laid out by its setting (:mod:`vfl.core.layouts`)
Data = VerticalData | HorizontalData | NetworkData
#: a ``[solver]`` or ``[privacy]`` table: the config's values, or their typed record
Values = Mapping[str, Any] | Params
#: metric columns of one iteration (:meth:`Solver.step`, :meth:`Solver.evaluate`)
Metrics = dict[str, float]
#: the audit's hook on every release: ``observer(solver, release, mean, rng)`` returns the
#: released values (:meth:`Solver.release`)
Observer = Callable[["Solver", Release, FloatArray, "np.random.Generator | ExactSampler"], FloatArray]


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


class PublicMemo:
    """The last computation on public values, handed back when asked again with equal inputs.

    The audit runs a mechanism on ``D`` and, teacher-forced, on ``D'``: every value both
    compute from the released transcript alone (ADMM sharing's z-update) is the same in
    both, so the audit gives the two solvers one memo (:attr:`Solver.public_memo`) and the
    neighbour reuses the run's result. Inputs are compared exactly (``np.array_equal``), so
    the numbers are the ones the neighbour would compute itself.
    """

    def __init__(self) -> None:
        self._key: tuple[str, tuple[npt.ArrayLike, ...]] | None = None
        self._value: FloatArray | None = None

    def __call__(self, name: str, inputs: tuple[npt.ArrayLike, ...], compute: Callable[[], FloatArray]) -> FloatArray:
        if (
            self._key is not None
            and self._key[0] == name
            and len(inputs) == len(self._key[1])
            and all(_same(a, b) for a, b in zip(inputs, self._key[1]))
            and self._value is not None
        ):
            return self._value.copy()
        value = compute()
        self._key = (name, tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in inputs))
        self._value = np.array(value)
        return value


def _same(a: npt.ArrayLike, b: npt.ArrayLike) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))
    return a == b


class Solver:
    """Base class of every registered algorithm (see the module docstring)."""

    if TYPE_CHECKING:  # the constructor every solver has (the default :meth:`build` calls it)

        def __init__(
            self,
            data: Data,
            *,
            objective: Objective,
            params: Params,
            privacy: Params,
            streams: Streams,
            iterations: int,
        ) -> None: ...

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
    #: Every other value the run writes is diagnostic (see :func:`~vfl.core.column_kinds.column_kinds`).
    released_columns: ClassVar[tuple[str, ...]] = ()
    #: why the test metrics are diagnostic when they are (summaries, figures)
    diagnostic_note: ClassVar[str] = ""
    #: columns that would be released by default (:data:`~vfl.core.column_kinds.ALWAYS_RELEASED`, ``epsilon_*``)
    #: but that this solver computes from exact private values: a realized, data-dependent
    #: privacy loss as the paper's claim
    diagnostic_columns: ClassVar[tuple[str, ...]] = ()
    #: keys of :meth:`describe` computed from exact private values (a count of clipped rows,
    #: the central optimum's norm): the manifest writes them in its ``diagnostic`` section
    diagnostic_keys: ClassVar[tuple[str, ...]] = ()
    #: where the solver's units can run (``run.backend``): this process, or also "dask"
    #: (Dask workers, :mod:`vfl.experiments.transport.dask_units`)
    backends: ClassVar[tuple[str, ...]] = ("inprocess",)
    #: the protocol its units speak (:class:`~vfl.core.protocol.Protocol`): any backend places
    #: them by its placement and runs its sides (None: the solver holds all its data here)
    protocol: ClassVar[Any] = None
    #: the backends where a run that claims a guarantee can run: its release events are
    #: recorded where the accounting is, and its noise drawn by the units themselves
    accounted_backends: ClassVar[tuple[str, ...]] = ("inprocess",)

    @classmethod
    def typed_params(cls, values: Values | None) -> Params:
        """``[solver]`` values (a dict, or the record) as this solver's typed, frozen record
        (:func:`~vfl.core.typed_params.params_model` of :attr:`params`), validated."""
        return typed(section_model(cls, "solver"), values)

    @classmethod
    def typed_privacy(cls, values: Values | None) -> Params:
        """``[privacy]`` values as this solver's typed record (of :attr:`privacy_params`)."""
        return typed(section_model(cls, "privacy"), values)

    @classmethod
    def check_config(cls, params: Values, privacy: Values, iterations: int) -> None:
        """Cross-key checks that need no data (raise ``ValueError``); default: none."""

    @classmethod
    def claims_guarantee(cls, privacy: Values) -> bool:
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
    def claims_label_guarantee(cls, privacy: Values) -> bool:
        """Whether a run with these ``[privacy]`` values claims label DP (the label relation,
        towards the passive parties): ``privacy.label_epsilon`` set, where declared."""
        return getattr(cls.typed_privacy(privacy), "label_epsilon", None) is not None

    @classmethod
    def unit_rows(cls, privacy: Values) -> bool:
        """Whether the data must have rows of unit l2 norm (a sensitivity needs it); default no."""
        return False

    @classmethod
    def build(
        cls, data: Data, *, objective: Objective, params: Params, privacy: Params, streams: Streams, iterations: int
    ) -> Solver:
        """Construct the solver for a run (default: the constructor of the contract).

        ``params`` and ``privacy`` are the typed records of :meth:`typed_params` and
        :meth:`typed_privacy`."""
        return cls(data, objective=objective, params=params, privacy=privacy, streams=streams, iterations=iterations)

    @classmethod
    def unit_noise(
        cls, widths: npt.ArrayLike, N: int, objective: Objective, params: Values, privacy: Values, iterations: int
    ) -> tuple[FloatArray, FloatArray]:
        """Each unit's calibrated noise scale and enforced sensitivity of one release, as the
        run's plan calibrates them (a party service checks its requests against these, from
        its own config); default: not declared."""
        raise NotImplementedError(f"{cls.name} declares no calibration a party can check")

    def released_metrics(self) -> Metrics:
        """What the coordinator computes from released values alone (a deployment run, where
        no unit sends an exact value); default: nothing."""
        return {}

    def initial_metrics(self) -> Metrics:
        """:meth:`evaluate` at the starting point, row 0 (default: the same)."""
        return self.evaluate()

    # -- the per-iteration protocol ----------------------------------------
    iteration: int = 0

    def step(self) -> Metrics:
        """Run one iteration; return its own statistics (timed with it)."""
        raise NotImplementedError

    def evaluate(self) -> Metrics:
        """Diagnostics of the current iterate for :attr:`columns` (not timed)."""
        return {}

    def train_margins(self) -> FloatArray:
        """Margins of the current model on the training samples (label order of the data)."""
        raise NotImplementedError

    def decision_function(self, test: Any) -> FloatArray:  # (test: the setting's held-out layout)
        """Margins of the current model on held-out data in the setting's layout."""
        raise NotImplementedError

    def releases(self) -> list[Release]:
        """The noisy releases of the last iteration (empty for non-private runs)."""
        return list(self._releases or ())

    def coef(self) -> FloatArray | None:
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
    _releases: list[Release] | None = None

    #: the audit's hook (see :meth:`release`); None in ordinary runs
    observer: Observer | None = None
    #: whether the solver's state can carry the audit's runs as a leading axis: its numeric
    #: kernels broadcast over leading axes, so when the observer returns a release with one
    #: (``(R, ...)``, :mod:`vfl.experiments.audit`), ``R`` runs go through each step together
    audit_batch = False
    #: a :class:`PublicMemo` the audit shares between a run and its teacher-forced neighbour
    #: (None in ordinary runs)
    public_memo: PublicMemo | None = None

    def audit_runs(self) -> int | None:
        """How many runs the audit's observer returns ahead of each release (its ``runs``;
        None: one run, as always outside the audit). The solver's in-process units let
        their messages carry that axis (:data:`~vfl.core.messages.RUNS`)."""
        runs: int | None = getattr(self.observer, "runs", None)
        return runs

    def release(
        self,
        mean: npt.ArrayLike,
        *,
        units: int | npt.ArrayLike,
        scale: npt.ArrayLike,
        sensitivity: npt.ArrayLike,
        rng: np.random.Generator | ExactSampler,
        mechanism: str = "gaussian",
        size: int | None = None,
        l2_sensitivity: npt.ArrayLike | None = None,
        relation: str = "features",
    ) -> FloatArray:
        """Publish ``mean`` plus noise, and record the
        :class:`~vfl.core.releases.Release` event.

        Every noisy value a solver publishes goes through here, so the white-box
        audit can watch (and, for the neighbouring run, replace) what is
        released: with an ``observer`` set, it is called as
        ``observer(solver, release, mean, rng)`` and returns the released
        values instead. ``mean`` has one row per unit in ``units`` (or is one
        unit's vector when ``units`` is a single int). Call
        :meth:`begin_releases` at the start of each iteration.
        """
        single = np.isscalar(units)
        mean = np.asarray(mean, dtype=np.float64)
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
        units: int | npt.ArrayLike,
        scale: npt.ArrayLike,
        sensitivity: npt.ArrayLike,
        rng: np.random.Generator | ExactSampler,
        size: int,
        mechanism: str = "gaussian",
        l2_sensitivity: npt.ArrayLike | None = None,
        relation: str = "features",
    ) -> Release:
        """Record the :class:`~vfl.core.releases.Release` event of a release whose noise is
        drawn elsewhere (by the units on their own workers), and return it: its ``scale`` is the one to draw
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
    def neighbours(cls, data: Data, privacy: Values, rng: np.random.Generator) -> list[Neighbour]:
        """Neighbouring datasets of ``data`` under this solver's relation, for the audit.

        A few natural pairs (changes a real dataset could show) and
        adversarial ones (changes that move the releases the most that the
        relation allows). Solvers without a stated relation audit nothing.
        """
        raise NotImplementedError(f"{cls.name} states no neighbouring relation to audit")

    @classmethod
    def protected_replaced(cls, data: Data, privacy: Values, rng: np.random.Generator) -> Data:
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
        """What the manifest says about privacy (a :class:`~vfl.core.typed_records.PrivacyInfo`);
        None for a solver without noise.

        Fields the summary reads, the same for every solver: ``mode``,
        ``dp_guarantee``, ``neighbouring`` (the relation, required when a
        guarantee is claimed), ``labels`` (what the relation leaves
        unprotected), ``mechanism``, ``enforced``, ``note`` or ``warning``,
        ``other_claims_meaning``. The runner adds ``noise`` (where it came from).
        """
        return None

    def describe(self) -> dict[str, Any]:  # (the manifest's JSON values)
        """Algorithm details for the manifest (beyond the validated parameters).

        A ``warnings`` list, if present, is printed in the run's summary.
        """
        return {}
