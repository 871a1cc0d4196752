"""A config's sections as typed, frozen dataclasses (``[data]``, ``[partition]``, ``[network]``,
``[objective]``, ``[solver]``, ``[privacy]``, ``[preprocessing]``, ``[run]``, ``[sweep]``,
``[audit]``, ``[tuning]``) and the values their keys may take."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from vfl.core.solver import Setting

LOSSES = ("logistic", "squared")


REDUCTIONS = ("sum", "mean", "unit_mean")


REGULARIZERS = ("l2sq", "half_l2sq", "l1")


#: ``[data]`` keys of file datasets, passed to the loader as options
FILE_DATASETS = ("libsvm", "csv")


FILE_DATA_KEYS = (
    "path",
    "test_path",
    "test_fraction",
    "split_seed",
    "stratify",
    "n_features",
    "zero_based",
    "label",
    "features",
    "categorical_columns",
    "label_positive",
    "delimiter",
    "labels",
    "fill",
)


VERTICAL_PARTITION_KEYS = ("columns", "ranges", "indices", "allow_unused", "public")


#: keys that moved to [preprocessing], with where they went
MOVED_KEYS = {
    "partition.normalize_rows": "preprocessing.normalize_rows",
    "partition.intercept": "preprocessing.intercept",
    "data.normalize_rows": "preprocessing.normalize_rows",
    "data.categorical": "preprocessing.encoding",
}


ROW_PARTITION_KEYS = ("agents", "samples_per_agent", "public", "test", "pool", "held_out")


POOLS = ("train", "train+test")


#: ``partition.held_out``: where a row setting's public and test rows come from: drawn from
#: the pool by the seed (records the units' rows come from too), or from the dataset's test
#: part, which the pool then leaves out (a published test file: rows the relation does not
#: protect)
HELD_OUT = ("pool", "test_part")


GRAPHS = ("gnm", "complete", "ring", "erdos_renyi", "file")


EXCHANGES = ("plain", "secret_sharing")


LABEL_READINGS = ("paper01", "pm1")


@dataclass(frozen=True)
class DataConfig:
    dataset: str
    options: dict = field(default_factory=dict)
    # Used only when *none* of the dataset's files is present (never to hide
    # a corrupt file); e.g. "synthetic:gisette-shaped" for gisette.
    fallback: str | None = None


@dataclass(frozen=True)
class PartitionConfig:
    """How the data is distributed: columns over parties (vertical) or rows over agents."""

    # vertical
    columns: list | None = None
    ranges: list | None = None
    indices: list | None = None
    allow_unused: bool = False
    # horizontal / network
    agents: int | None = None
    samples_per_agent: int | None = None
    public: int = 0
    test: int = 0
    pool: str = "train"
    held_out: str = "pool"

    def to_dict(self, setting: Setting) -> dict:
        keys = VERTICAL_PARTITION_KEYS if setting is Setting.VERTICAL else ROW_PARTITION_KEYS
        # unset optional keys are left out, so the dict reads back as the same config (and
        # held_out at its default, so that runs recorded before it existed stay current)
        return {
            k: getattr(self, k)
            for k in keys
            if getattr(self, k) is not None and not (k == "held_out" and self.held_out == "pool")
        }


@dataclass(frozen=True)
class NetworkConfig:
    graph: str = "gnm"
    nodes: int = 10
    edges: int | None = None
    p: float | None = None
    path: str | None = None
    exchange: str = "plain"
    # how +-1 labels enter the loss log(1 + exp(-L x^T z)): "paper01" is Xiao
    # et al. 2019's literal {0, 1} (App. E; it makes B_inf = 1/b_i exact), "pm1" the usual +-1
    labels: str = "paper01"


@dataclass(frozen=True)
class ObjectiveConfig:
    loss: str = "logistic"
    reduction: str = "sum"
    lam: float = 1e-3
    regularizer: str = "l2sq"


class _Table:
    """A validated table whose declared keys read as attributes (``config.solver.rho``)."""

    def __getattr__(self, key):
        values = self.__dict__.get("values")
        if values is not None and key in values:
            return values[key]
        raise AttributeError(f"{type(self).__name__} has no key {key!r}")


@dataclass(frozen=True)
class SolverConfig(_Table):
    name: str = "admm_sharing"
    epochs: int = 100
    values: dict = field(default_factory=dict)

    def params(self) -> dict:
        """The resolved ``[solver]`` table, for records."""
        return {"name": self.name, "epochs": self.epochs, **self.values}


@dataclass(frozen=True)
class PrivacyConfig(_Table):
    """The solver's ``[privacy]`` keys (``values``) and the generic ones.

    ``replayable_noise``: noise from the seed's streams (a simulation anyone
    can replay) or from OS entropy; resolved when the config is read, false
    by default exactly when the run claims a guarantee.
    """

    values: dict = field(default_factory=dict)
    replayable_noise: bool = True
    budget_epsilon: float | None = None
    claims_guarantee: bool = False

    def with_values(self, **changes) -> PrivacyConfig:
        return replace(self, values={**self.values, **changes})

    @property
    def accounting(self) -> bool:
        return self.values.get("delta") is not None

    @property
    def private(self) -> bool:
        return bool(self.values.get("sigma") or self.values.get("epsilon") is not None)

    def to_dict(self) -> dict:
        return {**self.values, "replayable_noise": self.replayable_noise, "budget_epsilon": self.budget_epsilon}


@dataclass(frozen=True)
class PreprocessingConfig:
    """The ``[preprocessing]`` table as written (validated against the dataset when the
    stage is fitted, :func:`vfl.datasets.stage.fit_stage`)."""

    values: dict = field(default_factory=dict)


#: ``run.baselines``: which references a run computes. ``central`` is the one
#: exact central solve (F*, for ``suboptimality``) and the base rate; ``all``
#: adds the scikit-learn fits on all features and on party 1's (or provider 1
#: alone); ``none`` computes nothing (``suboptimality`` is then NaN).
BASELINE_SETS = ("all", "central", "none")


@dataclass(frozen=True)
class RunConfig:
    seed: int = 0
    repeats: int = 1
    # evaluate the metrics every k iterations (and at the last): diagnostics can
    # cost as much as an iteration, and they are never charged to solver time
    eval_every: int = 1
    # which references to compute (BASELINE_SETS): at scale the scikit-learn fits
    # cost more than the run, and "central" is F* alone
    baselines: str = "all"
    # where the parties run: "inprocess", or "dask" (each party on its own Dask worker,
    # vfl.experiments.transport.dask_units; `vfl run --cluster` names the scheduler)
    backend: str = "inprocess"
    # dask: seconds to wait for a worker that can take over a lost party's data;
    # services: for a lost party to answer again at its address
    party_wait: float = 60.0
    # `vfl run` writes checkpoint.json every k iterations (0: never); `vfl run --resume`
    checkpoint_every: int = 10
    # services: each party's address, party 1 first ("127.0.0.1:50051")
    parties: tuple = ()
    # services: the coordinator's certificate, key and the deployment's CA (PEM paths)
    tls: dict | None = None
    # services: plaintext, allowed on loopback addresses only (tests, a first try)
    insecure: bool = False


#: ``run.backend`` values; the solver class lists those it supports (``Solver.backends``)
BACKENDS = ("inprocess", "dask", "services")


#: run keys that config.json records only when they differ from the default (runs
#: recorded before the key existed stay current)
_RUN_KEYS_IF_SET = {
    "baselines": "all",
    "backend": "inprocess",
    "party_wait": 60.0,
    "checkpoint_every": 10,
    "parties": (),
    "tls": None,
    "insecure": False,
}


#: ``[run.tls]`` keys
TLS_KEYS = ("certificate", "key", "ca")


@dataclass(frozen=True)
class SweepConfig:
    """Defaults of ``vfl sweep-noise`` for this config (the CLI may override)."""

    sigmas: list = field(default_factory=lambda: [0.0])
    seeds: list = field(default_factory=lambda: [0])
    # target epsilons (accounting mode); when given, the sweep is over them
    epsilons: list = field(default_factory=list)


@dataclass(frozen=True)
class AuditConfig:
    """Defaults of ``vfl audit`` for this config (``--runs`` overrides)."""

    # noise draws per neighbouring pair and direction: a mechanism whose claim is hard to
    # refute sets more, so that a noise scale off by 3x is caught (docs/audit.md)
    runs: int = 100


@dataclass(frozen=True)
class TuningConfig:
    """``[tuning]``: what ``vfl tune`` chose and how (written by it, read by the run).

    ``method = "public"``: chosen on rows declared public, nothing spent. ``"private"``:
    random search with a random number of trials on the private rows (Papernot and Steinke
    2022), each trial ``trial_mu``-GDP; the run charges the tuning's RDP
    (:func:`vfl.privacy.random_search.tuning_rdp`) to every record before its own releases.
    """

    method: str
    values: dict = field(default_factory=dict)

    @property
    def private(self) -> bool:
        return self.method == "private"


TUNING_METHODS = ("public", "private")


#: ``audit.runs`` bounds: fewer than 10 draws bound nothing; 1e6 is hours of replays
AUDIT_RUNS = (10, 1_000_000)
