"""What Algorithms 1-3 share: parameters, the trainer's step (line 6), the dual step (line 8)."""

from __future__ import annotations

import math

import numpy as np

from vfl.core.host import LocalEnv
from vfl.core.inprocess import InProcessUnits
from vfl.core.layouts import HorizontalData
from vfl.core.objective import Objective
from vfl.core.params import Param
from vfl.core.solver import Setting, Solver
from vfl.core.streams import Streams
from vfl.core.wire import Inference, Wire

from .batched import _reg_value
from .neighbouring import ConsensusNeighbours
from .providers import PROVIDERS_PROTOCOL, Providers, ProviderSpec, check_provider_rows
from .schedules import REGULARIZERS, _log_term

_COMMON_PARAMS = (
    Param("rho", float, 1.0, "penalty rho of the augmented Lagrangian (paper: 1)", low=0, low_open=True),
    Param(
        "average_start",
        int,
        1,
        "first index s of the providers' ergodic averages in the "
        "augmented objective: 1 = (1/k) sum_{s=1..k} (Theorem 4; the index of w_bar), "
        "0 = (1/k) sum_{s=0..k-1} (Theorem 3)",
        low=0,
        high=1,
    ),
)
_EXACT_PARAMS = (
    Param(
        "local_solver",
        str,
        "auto",
        "exact local argmin: newton (l2: Newton; l1: proximal "
        "Newton), fista (accelerated proximal gradient), auto = newton for l2, fista for l1",
        choices=("auto", "newton", "fista"),
    ),
    Param(
        "inner_tol",
        float,
        1e-9,
        "each local solve stops when its KKT residual (norm of the minimum-norm subgradient) is <= this",
        low=0,
        low_open=True,
    ),
    Param("max_inner", int, 500, "most iterations of one batched local solve", low=1),
)
_DELTA = Param(
    "delta",
    float,
    1e-3,
    "per-iteration delta of the Gaussian mechanism, also the "
    "total delta of the moments accountant (paper: 1e-3 ... 1e-6)",
    low=0,
    high=1,
    low_open=True,
    high_open=True,
)
_EPSILON = Param(
    "epsilon",
    float,
    None,
    "end-to-end target epsilon of the whole run (with "
    "privacy.delta): the per-iteration epsilon of Theorem 1 is solved for so that "
    "the composed releases spend exactly this",
    low=0,
    low_open=True,
)
_EPSILON_PER_ITERATION = Param(
    "epsilon_per_iteration",
    float,
    None,
    "Huang et al. 2019's own parameter: the epsilon of "
    "Theorem 1 per iteration (the paper's figures: 0.01 ... 0.2; the classical Gaussian "
    "mechanism needs <= 1); give it or privacy.epsilon, not both",
    low=0,
    high=1,
    low_open=True,
)
_ROW_BOUND = Param(
    "row_bound",
    str,
    "check",
    "how ||a|| <= 1 (S1 = 1) is enforced: check = "
    "refuse rows above norm 1 (+1e-9 rounding); clip (the algorithm alone, refused "
    "in a config, where rows are bounded for train and test alike by "
    "preprocessing.row_clip = 1.0 or normalize_rows = true)",
    choices=("check", "clip"),
)
_ACCOUNTANT = Param("accountant", str, "pld", "dp-accounting accountant composing the releases", choices=("pld", "rdp"))
_NEIGHBOURS = (
    "one record (a, b) of one provider's dataset replaced by another, m unchanged; "
    "both records with ||a|| <= 1 and b in {-1, +1} (Huang et al., Sec. IV); the "
    "protected unit is the provider"
)


def per_iteration_epsilon(privacy, T: int, ratio: float = 1.0) -> float:
    """Theorem 1's per-iteration epsilon: given (``epsilon_per_iteration``) or solved from the
    run's target ``epsilon`` over ``T`` iterations.

    With Theorem 1's sigma, ``sigma_k = Delta_cal,k sqrt(2 ln(1.25/delta)) / eps`` for the
    sensitivity ``Delta_cal`` it is calibrated to, each release's noise multiplier against
    the enforced sensitivity is ``sigma_k / Delta_k = sqrt(2 ln(1.25/delta)) / (eps ratio)``
    with ``ratio = Delta_k / Delta_cal,k`` (1 for Algorithm 3, whose schedule eta cancels
    out). The ``T`` releases compose exactly as one Gaussian, so the target fixes the
    common multiplier ``z`` (:func:`vfl.privacy.calibrate_sigma`, the run's accountant) and
    ``eps = sqrt(2 ln(1.25/delta)) / (z ratio)``. ``ValueError`` when that is above 1, where
    Theorem 1's Gaussian mechanism stops holding.
    """
    if privacy.epsilon_per_iteration is not None:
        return float(privacy.epsilon_per_iteration)
    if privacy.epsilon is None or privacy.delta is None:
        raise ValueError(
            "set privacy.epsilon with privacy.delta (the whole run's target) or "
            "privacy.epsilon_per_iteration (Theorem 1's)"
        )
    from vfl.privacy import calibrate_sigma  # lazy: start-up (it loads dp-accounting, 0.6 s)

    delta, target = float(privacy.delta), float(privacy.epsilon)
    z = calibrate_sigma(target, delta, int(T), 1.0, accountant=privacy.accountant)
    eps = math.sqrt(2.0 * _log_term(delta)) / (z * ratio)
    if eps > 1.0:
        raise ValueError(
            f"privacy.epsilon = {target:g} over {T} iterations needs a per-iteration "
            f"epsilon of {eps:.4g} > 1, beyond Theorem 1's Gaussian mechanism: "
            "lower privacy.epsilon or run more iterations"
        )
    return eps


def _check_epsilon_keys(name: str, privacy, needed: bool) -> None:
    if privacy.row_bound == "clip":
        raise ValueError(
            f"{name}: privacy.row_bound = 'clip' would clip the providers' rows "
            "only, and the test rows and the pooled optimum would be scored in "
            "another space: set preprocessing.row_clip = 1.0 (every row, one stage)"
        )
    both = privacy.epsilon is not None and privacy.epsilon_per_iteration is not None
    if both:
        raise ValueError(
            f"{name}: give privacy.epsilon (the run's total) or privacy.epsilon_per_iteration (Theorem 1's), not both"
        )
    if needed and privacy.epsilon is None and privacy.epsilon_per_iteration is None:
        raise ValueError(
            f"{name}: set privacy.epsilon (the whole run's target) or "
            "privacy.epsilon_per_iteration (Huang et al.'s per-iteration parameter)"
        )
    if needed and privacy.epsilon is not None and privacy.delta is None:
        raise ValueError(f"{name}: privacy.epsilon is a target (epsilon, delta): set privacy.delta")


class _Consensus(ConsensusNeighbours, Solver):
    """State, trainer step, metrics and evaluation shared by Algorithms 1-3."""

    setting = Setting.HORIZONTAL
    regularizers = REGULARIZERS
    #: the classifier is the trainer's global w (Sec. VI): scoring a test row sends nothing
    inference = Inference(
        0, "the trainer holds the deployable model, its global w^k, and scores test rows alone: no message"
    )
    #: the providers' side of an iteration (a :class:`~vfl.admm.consensus.providers.ProviderGroup`
    #: subclass: the solver's local step): on Dask, groups of providers on their own workers
    #: (:mod:`vfl.experiments.providers`); the release events are recorded by the trainer,
    #: so accounting runs there too
    provider_group: type
    audit_batch = True  # its kernels broadcast over the audit's runs
    backends = ("inprocess", "dask")
    accounted_backends = ("inprocess", "dask")
    protocol = PROVIDERS_PROTOCOL
    diagnostic_keys = ("rows_clipped",)  # how many private rows were above norm 1
    #: what the ergodic average of the providers' iterates averages
    _shared_name = "w_i"
    _private = False

    @classmethod
    def group_settings(cls, params, regularizer: str) -> dict:
        """The local step's own public options, sent to every group (:class:`ProviderSpec`)."""
        return {}

    @classmethod
    def check_config(cls, params, privacy, iterations):
        if cls._private:  # Algorithms 2 and 3 need their (epsilon, delta) target
            _check_epsilon_keys(cls.name, cls.typed_privacy(privacy), needed=True)

    def __init__(
        self,
        data: HorizontalData,
        *,
        objective: Objective,
        params: dict,
        privacy: dict,
        streams: Streams,
        iterations: int,
    ):
        if data.units is None:  # the providers' rows are in this process
            A, b, _ = check_provider_rows(data.A, data.b, name=self.name, private=False, row_bound=None)
            N, m, d = A.shape
        else:  # elsewhere: what the trainer knows are the sizes
            N, m, d = data.units.shape
        if objective.loss != "logistic":
            raise ValueError(f"{self.name} implements the logistic loss only, got objective.loss = {objective.loss!r}")
        if objective.regularizer not in REGULARIZERS:
            raise ValueError(
                f"{self.name} needs objective.regularizer 'l1' or 'half_l2sq' (Huang "
                f"et al.'s R), got {objective.regularizer!r}"
            )
        if objective.reduction != "unit_mean" or objective.unit_size != m:
            raise ValueError(
                f"{self.name} minimizes sum_i (1/m) sum_j l + lam R (eq. (1a)): needs "
                f"objective.reduction = 'unit_mean' with unit_size = m = {m}, got "
                f"{objective.reduction!r} with unit_size {objective.unit_size}"
            )
        if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
            raise ValueError(f"iterations must be an integer >= 1, got {iterations!r}")
        self.rows_clipped = 0
        self.N, self.m, self.d = N, m, d
        self.objective = objective
        self.lam = float(objective.lam)
        self.lam_per_provider = self.lam / N
        self.regularizer = objective.regularizer
        self.params = params = self.typed_params(params)
        self.privacy = privacy = self.typed_privacy(privacy)
        self.streams = streams
        self.iterations = int(iterations)
        self.rho = float(params.rho)
        self.average_start = int(params.average_start)
        self.iteration = 0
        # Zero start: D_w = ||w*|| bounds ||w* - w^0|| only then (Appendices C, E).
        self.w = np.zeros(d)  # global w^k
        self.W_shared = np.zeros((N, d))  # what providers send (w_i^k or noisy w~_i^k)
        self.gamma = np.zeros((N, d))  # duals gamma_i^k
        self._sum_w = np.zeros(d)  # sum_{s=1..k} w^s
        self._sum_shared = np.zeros((N, d))  # sum_{s=1..k} shared_i^s
        self._diagnosed = (None, None)  # (w^k, the providers' diagnostics at w^k)
        self._releases = []
        self.wire = Wire(N)
        self.spec = spec = ProviderSpec(
            group=self.provider_group.kind(),
            rho=self.rho,
            lam_per_provider=float(self.lam_per_provider),
            regularizer=self.regularizer,
            private=bool(self._private),
            row_bound=getattr(privacy, "row_bound", None),
            name=self.name,
            settings=self.group_settings(self.params, self.regularizer),
        )
        units = data.units
        if units is None:  # the group of all N here releases through self.release, with the
            # subclass's noise stream (set after this constructor)
            units = InProcessUnits.rows(
                A,
                b,
                LocalEnv(
                    release=lambda mean, *, rng, **kw: self.release(mean, rng=self._rng, **kw), runs=self.audit_runs
                ),
            )
        self.providers = Providers(
            units.open(PROVIDERS_PROTOCOL, spec), lambda **kw: self.record_release(rng=self._rng, **kw), (N, m, d)
        )
        self.rows_clipped = self.providers.rows_clipped

    #: the noise stream of the releases (None: the solver releases nothing noisy)
    _rng = None

    @property
    def A(self) -> np.ndarray:
        """The providers' rows ``(N, m, d)``, when they are in this process."""
        return self.providers.A

    @property
    def b(self) -> np.ndarray:
        """The providers' labels ``(N, m)``, when they are in this process."""
        return self.providers.b

    @property
    def W(self) -> np.ndarray:
        """The providers' clean ``w_i^k`` ``(N, d)`` (a diagnostic, unless Algorithm 1 sends
        it)."""
        return self.providers.models()

    # -- one iteration: the trainer's (3c) and the providers' (3d) ----------
    def _trainer_and_duals(self, shared: np.ndarray) -> None:
        """Line 6/7/8: ``w = mean(shared) - mean(gamma) / rho``; line 8/9/10: dual step.

        The round's messages: every provider sends its ``d`` values to the
        trainer, which sends ``w`` (``d`` values) back to each.
        """
        self.wire.gather(self.d)
        self.wire.scatter(self.d)
        # (leading axes of ``shared``, the audit's runs, are kept: providers are axis -2)
        w = shared.mean(axis=-2) - self.gamma.mean(axis=-2) / self.rho
        self.gamma = self.gamma - self.rho * (shared - w[..., None, :])
        self.w = w
        self.W_shared = shared
        self._sum_w = self._sum_w + w
        self._sum_shared = self._sum_shared + shared
        self.iteration += 1

    # -- metrics ------------------------------------------------------------
    def ergodic_averages(self) -> tuple[np.ndarray, np.ndarray]:
        """``(W_bar, w_bar)`` after k >= 1 iterations (Sec. V).

        ``w_bar = (1/k) sum_{s=1..k} w^s``; ``W_bar_i`` averages the shared
        local iterates over ``s = 1..k`` (``average_start = 1``) or
        ``s = 0..k-1`` (Theorem 3's, with the zero start).
        """
        k = self.iteration
        if k == 0:
            raise ValueError("no ergodic average before the first iteration")
        total = self._sum_shared if self.average_start == 1 else self._sum_shared - self.W_shared
        return total / k, self._sum_w / k

    def _diagnose(self):
        """The providers' training margins, losses and local objectives at ``w^k`` (and the
        ergodic averages), asked once per iterate (metrics and runner share them).

        Keyed on the array object ``w`` itself (the trainer step assigns a new
        one; the cache's reference keeps the identity from being reused).
        """
        if self._diagnosed[0] is not self.w:
            W_bar = None if self.iteration == 0 else self.ergodic_averages()[0]
            self._diagnosed = (self.w, self.providers.diagnose(self.w, W_bar))
        return self._diagnosed[1]

    def _metrics(self) -> dict:
        # One pass over the rows at w^k gives both (1a) and metric 2.
        _, losses, f = self._diagnose()
        loss = float(losses.sum())
        out = {"objective": loss + self.lam * float(_reg_value(self.w, self.regularizer)), "empirical_loss": loss}
        if self.iteration == 0:
            out["augmented_objective"] = out["consensus_violation"] = float("nan")
        else:
            W_bar, w_bar = self.ergodic_averages()
            # augmented_objective's sum, with f_i(W_bar_i) from the providers
            gap = np.sqrt(np.einsum("nd,nd->n", W_bar - w_bar, W_bar - w_bar))
            out["augmented_objective"] = float(f.sum() + gap.sum())
            out["consensus_violation"] = float(np.linalg.norm(W_bar - w_bar, axis=1).sum())
        return out

    def evaluate(self) -> dict:
        """Sec. VI metrics of the current iterate, not charged to solver time.

        ``augmented_objective``: ``sum_i f_i(W_bar_i) + ||W_bar_i - w_bar||``
        (ergodic averages, unsquared consensus term, beta = 1; NaN at k = 0);
        ``empirical_loss``: ``sum_i (1/m) sum_j l`` at the current global
        ``w^k``; ``objective``: problem (1a) at ``w^k`` (the value the
        centralized optimum is compared with); ``consensus_violation``:
        ``sum_i ||W_bar_i - w_bar||``.
        """
        return self._metrics()

    def _train_margins(self) -> np.ndarray:
        """``A_i w^k`` ``(N, m)``, computed once per iterate (metrics and runner share it)."""
        return self._diagnose()[0]

    def train_margins(self) -> np.ndarray:
        """``a_ij^T w^k`` for every training row, in the order of ``b.reshape(-1)``."""
        return self._train_margins().reshape(-1)

    def decision_function(self, test) -> np.ndarray:
        """``X_test w^k`` for a plain ``(n, d)`` test matrix (dense or sparse; the global w)."""
        if getattr(test, "ndim", 2) != 2 or test.shape[1] != self.d:
            raise ValueError(f"test rows must be (n, {self.d}), got {getattr(test, 'shape', None)}")
        return np.asarray(test @ self.w).reshape(-1)

    def coef(self) -> np.ndarray:
        """The trained classifier, the trainer's global ``w^k`` (Sec. VI does not say which w)."""
        return self.w.copy()

    def _describe_common(self) -> dict:
        return {
            "problem": ("sum_i [(1/m) sum_j log(1 + exp(-b a^T w_i)) + (lam/N) R(w_i)] s.t. w_i = w (eq. (1a)-(1b))"),
            "N": self.N,
            "m": self.m,
            "d": self.d,
            "lam": self.lam,
            "lam_per_provider": self.lam_per_provider,
            "regularizer": self.regularizer,
            "rho": self.rho,
            "init": "w^0 = w_i^0 = gamma_i^0 = 0 (not given in the paper)",
            "order": "w_i -> w -> gamma_i (Algorithm listings)",
            "ergodic_average": (
                f"W_bar_i over s = {self.average_start}.."
                f"{'k' if self.average_start == 1 else 'k-1'} of "
                f"{self._shared_name}; w_bar over s = 1..k"
            ),
            "classifier": "global w^k (the trainer's model)",
        }


def _assumptions(solver) -> dict:
    how = (
        "checked at construction: rows above norm 1 + 1e-9 are refused, rows within that "
        "rounding slack scaled onto the unit ball"
        if solver.privacy.row_bound == "check"
        else "clipped at construction: rows above norm 1 scaled onto the unit ball (how "
        "many: the manifest's diagnostic.solver.rows_clipped)"
    )
    return {
        "||a|| <= 1": f"enforced ({how})",
        "|b| = 1": "enforced (labels checked to be -1 or +1)",
        "S1 = 1": "enforced: logistic loss only, so ||l'|| = |b| sigmoid(.) ||a|| <= 1",
    }
