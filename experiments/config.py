"""Experiment configuration: TOML files, validated into typed dataclasses.

A config names a registered solver (:mod:`vfl.experiments.registry`); the
solver's class declares its ``[solver]`` and ``[privacy]`` keys and the
setting it runs in, which decides how ``[partition]`` (and ``[network]``)
distribute the data::

    name = "a9a"                 # optional, default: the file's stem

    [data]
    dataset = "a9a"              # a9a | gisette | adult | synthetic | libsvm | csv
    options = {}                 # dataset options (synthetic sizes, ...)
    # fallback = "synthetic:gisette-shaped"   # only if no file of dataset is present
    # libsvm / csv: path = "...", test_path = "..." or test_fraction = 0.2, ... (see docs/own-data.md)

    [preprocessing]              # one stage for every setting (vfl.datasets.stage)
    # encoding = "onehot", scaling = "minmax", range = [0, 1], bounds = "schema",
    # row_clip = 1.0, normalize_rows = true, intercept = true (vertical default)

    [partition]                  # vertical solvers: exactly one of columns / ranges / indices
    columns = [66, 57]           # consecutive column counts, party 1 first
    allow_unused = false         # columns used by no party are an error
    public = 0                   # rows of the test part declared public (tuning, public fits)
    # horizontal / network solvers: agents = 100, samples_per_agent = 210,
    # public = 162, test = 9000, pool = "train" | "train+test",
    # held_out = "pool" | "test_part" (where the public and test rows are drawn from)

    [network]                    # network solvers only
    # graph = "gnm", nodes = 10, edges = 20, exchange = "plain"

    [objective]
    loss = "logistic"            # logistic | squared
    reduction = "sum"            # sum | mean | unit_mean (sum over units of each unit's mean)
    regularizer = "l2sq"         # l2sq: lam ||x||^2 | half_l2sq: lam/2 ||x||^2 | l1: lam ||x||_1
    lam = 0.001

    [solver]
    name = "admm_sharing"        # any registered solver: `vfl solvers` lists them and their keys
    epochs = 100                 # iterations
    # + the solver's own keys

    [privacy]                    # the solver's own keys, plus:
    # replayable_noise = true    # default: false when the run claims a guarantee
    # budget_epsilon = 8.0       # with `vfl run --stop-at-budget`

    [run]
    seed = 0
    repeats = 1                  # repeats into one run directory (a deployment's releases all
                                 # composed in one ledger; a simulation's are replications)
    eval_every = 1               # metrics every k iterations (and at the last)
    backend = "inprocess"        # or "dask": each party on its own Dask worker (vfl run --cluster)
    party_wait = 60.0            # dask: seconds to wait for a worker to take over a lost party
    checkpoint_every = 10        # vfl run: checkpoint.json every k iterations (0: none)

    [audit]                      # defaults of `vfl audit` for this config
    runs = 100                   # noise draws per neighbouring pair and direction (--runs)

Unknown keys are errors that list the valid ones; wrong types name the key.
``--set solver.rho=2`` style overrides go through the same validation.
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from vfl.core.errors import ConfigError
from vfl.core.params import (
    MAX_ITERATIONS,
    MAX_REPEATS,
    Param,
    as_boolean,
    as_choice,
    as_integer,
    as_number,
    check_epsilon,
    validate_table,
)
from vfl.core.solver import Setting

__all__ = [
    "Config",
    "DataConfig",
    "NetworkConfig",
    "ObjectiveConfig",
    "PartitionConfig",
    "PrivacyConfig",
    "RunConfig",
    "SolverConfig",
    "SweepConfig",
    "apply_overrides",
    "config_from_dict",
    "load_config",
    "parse_override",
]

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
    (:func:`vfl.privacy.tuning.tuning_rdp`) to every record before its own releases.
    """

    method: str
    values: dict = field(default_factory=dict)

    @property
    def private(self) -> bool:
        return self.method == "private"


TUNING_METHODS = ("public", "private")


def _tuning(t: dict) -> TuningConfig | None:
    if not t:
        return None
    method = _choice("tuning.method", t.get("method"), TUNING_METHODS)
    values = {k: v for k, v in t.items() if k != "method"}
    if method == "private":
        for key in ("trial_mu", "eta", "gamma", "trials"):
            if key not in values:
                raise ConfigError(
                    f"tuning.{key} is required with tuning.method = 'private' (vfl tune --private writes it)"
                )
        as_number("tuning.trial_mu", values["trial_mu"], low=0)
        as_number("tuning.eta", values["eta"], low=0)
        as_number("tuning.gamma", values["gamma"], low=0, high=1, low_open=True, high_open=True)
        as_integer("tuning.trials", values["trials"], low=1)
    return TuningConfig(method=method, values=values)


#: ``audit.runs`` bounds: fewer than 10 draws bound nothing; 1e6 is hours of replays
AUDIT_RUNS = (10, 1_000_000)


@dataclass(frozen=True)
class Config:
    name: str
    data: DataConfig
    partition: PartitionConfig
    objective: ObjectiveConfig
    solver: SolverConfig
    privacy: PrivacyConfig
    run: RunConfig
    sweep: SweepConfig = field(default_factory=SweepConfig)
    network: NetworkConfig | None = None
    setting: Setting = Setting.VERTICAL
    preprocessing: PreprocessingConfig = field(default_factory=PreprocessingConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)
    tuning: TuningConfig | None = None

    def to_dict(self) -> dict:
        """The fully resolved config (every default filled in), JSON-ready."""
        d = {
            "name": self.name,
            "data": asdict(self.data),
            "preprocessing": dict(self.preprocessing.values),
            "partition": self.partition.to_dict(self.setting),
            "objective": asdict(self.objective),
            # network.exchange is the one place for the exchange (solvers get a copy)
            "solver": {
                k: v for k, v in self.solver.params().items() if not (self.network is not None and k == "exchange")
            },
            "privacy": self.privacy.to_dict(),
            "run": {k: v for k, v in asdict(self.run).items() if k not in _RUN_KEYS_IF_SET or v != _RUN_KEYS_IF_SET[k]},
            "sweep": {k: v for k, v in asdict(self.sweep).items() if v != []},
        }
        if self.network is not None:
            d["network"] = {k: v for k, v in asdict(self.network).items() if v is not None}
        if self.audit != AuditConfig():  # recorded when set: older runs' configs stay current
            d["audit"] = asdict(self.audit)
        if self.tuning is not None:
            d["tuning"] = {"method": self.tuning.method, **self.tuning.values}
        return d

    def with_overrides(self, overrides: list[str]) -> Config:
        """This config with ``key=value`` overrides applied, re-validated."""
        return config_from_dict(apply_overrides(self.to_dict(), overrides), default_name=self.name)


# -- validation helpers ---------------------------------------------------------

_TOP = (
    "name",
    "data",
    "preprocessing",
    "partition",
    "network",
    "objective",
    "solver",
    "privacy",
    "run",
    "sweep",
    "audit",
    "tuning",
)


def _typename(value) -> str:
    return type(value).__name__


def _number(key, value, *, positive=False, nonneg=False) -> float:
    return as_number(key, value, low=0 if (positive or nonneg) else None, low_open=positive)


def _integer(key, value, *, minimum=None) -> int:
    return as_integer(key, value, low=minimum)


_choice = as_choice
_boolean = as_boolean


def _int_list(key, value, depth: int) -> list:
    """A list (depth 1) or list of lists (depth 2) of integers."""
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{key} must be a non-empty list, got {value!r}")
    if depth == 1:
        return [_integer(f"{key}[{i}]", v) for i, v in enumerate(value)]
    return [_int_list(f"{key}[{i}]", v, 1) for i, v in enumerate(value)]


def _check_keys(section: str, table: dict, valid, hint: str = "") -> None:
    for key in table:
        moved = MOVED_KEYS.get(f"{section}.{key}")
        if moved and key not in valid:
            raise ConfigError(f"{section}.{key} moved to the [preprocessing] section: set {moved}")
        if key not in valid:
            raise ConfigError(f"unknown key '{section}.{key}'; valid keys in [{section}]{hint}: {', '.join(valid)}")


def _data(d: dict) -> DataConfig:
    if "dataset" not in d:
        raise ConfigError('data.dataset is required (e.g. dataset = "a9a")')
    if not isinstance(d["dataset"], str):
        raise ConfigError(f"data.dataset must be a string, got {d['dataset']!r}")
    if d["dataset"] == "parties":
        return _party_data(d)
    file_keys = FILE_DATA_KEYS if d["dataset"] in FILE_DATASETS else ()
    _check_keys("data", d, ("dataset", "options", "fallback", *file_keys))
    options = d.get("options", {})
    if not isinstance(options, dict):
        raise ConfigError(f"data.options must be a table, got {_typename(options)}")
    options = dict(options)
    for key in file_keys:
        if key in d:
            options[key] = d[key]
    if d["dataset"] in FILE_DATASETS and "path" not in options:
        raise ConfigError(f"data.path is required for dataset = {d['dataset']!r} (the training file)")
    fallback = d.get("fallback")
    if fallback is not None:
        _check_fallback(d["dataset"], fallback)
    return DataConfig(dataset=d["dataset"], options=options, fallback=fallback)


def _party_data(d: dict) -> DataConfig:
    """``dataset = "parties"``: one ``[[data.party]]`` table per party, checked now (every
    party's keys, a test source), read when the run starts (:mod:`vfl.datasets.parties`)."""
    from vfl.datasets.parties.spec import DATA_KEYS, check_parties

    _check_keys("data", d, ("dataset", "options", "fallback", *DATA_KEYS))
    if d.get("fallback") is not None:
        raise ConfigError("data.fallback applies to a registry dataset, not to party files")
    given = d.get("options", {})  # config.json holds the keys under options
    if not isinstance(given, dict):
        raise ConfigError(f"data.options must be a table, got {_typename(given)}")
    options = {**given, **{k: v for k, v in d.items() if k in DATA_KEYS}}
    check_parties(options)
    return DataConfig(dataset="parties", options=options)


def _check_fallback(dataset: str, fallback) -> None:
    """A fallback is generated data standing in for a file dataset; anywhere else it
    would be silently ignored (a generated or user dataset is never missing). A dataset set
    to its own fallback (``--set data.dataset=synthetic:gisette-shaped`` on a gisette
    config) is the stand-in asked for directly: nothing is ignored."""
    from vfl.datasets import REGISTRY, SYNTHETIC_PRESETS

    if dataset == fallback:
        return
    if dataset not in REGISTRY:
        raise ConfigError(
            f"data.fallback applies to a dataset read from files ({', '.join(REGISTRY)}), not to dataset = {dataset!r}"
        )
    generated = ["synthetic", *(f"synthetic:{p}" for p in SYNTHETIC_PRESETS)]
    if fallback not in generated:
        raise ConfigError(f"data.fallback = {fallback!r} is not generated data; use one of: {', '.join(generated)}")


def _partition(p: dict, setting: Setting, party_files: bool = False) -> PartitionConfig:
    if party_files and setting is not Setting.VERTICAL:
        raise ConfigError(
            f'data.dataset = "parties" (one file per party, aligned rows) is '
            f"for vertical solvers; this solver is {setting.value}"
        )
    if setting is Setting.VERTICAL:
        _check_keys("partition", p, VERTICAL_PARTITION_KEYS, " for a vertical solver")
        given = [k for k in ("columns", "ranges", "indices") if k in p]
        if party_files:  # each party holds its own file's columns
            if given:
                raise ConfigError(
                    f"partition.{given[0]}: with party files each party holds the columns of its own file; leave it out"
                )
            return PartitionConfig(
                allow_unused=_boolean("partition.allow_unused", p.get("allow_unused", False)),
                public=_integer("partition.public", p.get("public", 0), minimum=0),
            )
        if len(given) != 1:
            raise ConfigError(
                "partition needs exactly one of columns, ranges, indices"
                + (f"; got {', '.join(given)}" if given else "")
            )
        return PartitionConfig(
            columns=_int_list("partition.columns", p["columns"], 1) if "columns" in p else None,
            ranges=_int_list("partition.ranges", p["ranges"], 2) if "ranges" in p else None,
            indices=_int_list("partition.indices", p["indices"], 2) if "indices" in p else None,
            allow_unused=_boolean("partition.allow_unused", p.get("allow_unused", False)),
            public=_integer("partition.public", p.get("public", 0), minimum=0),
        )
    valid = ROW_PARTITION_KEYS if setting is Setting.HORIZONTAL else ROW_PARTITION_KEYS[1:]
    _check_keys("partition", p, valid, f" for a {setting.value} solver")
    if setting is Setting.HORIZONTAL and "agents" not in p:
        raise ConfigError("partition.agents is required for a horizontal solver (providers)")
    if "samples_per_agent" not in p:
        raise ConfigError(f"partition.samples_per_agent is required for a {setting.value} solver")
    part = PartitionConfig(
        agents=_integer("partition.agents", p["agents"], minimum=1) if "agents" in p else None,
        samples_per_agent=_integer("partition.samples_per_agent", p["samples_per_agent"], minimum=1),
        public=_integer("partition.public", p.get("public", 0), minimum=0),
        test=_integer("partition.test", p.get("test", 0), minimum=0),
        pool=_choice("partition.pool", p.get("pool", "train"), POOLS),
        held_out=_choice("partition.held_out", p.get("held_out", "pool"), HELD_OUT),
    )
    if part.held_out == "test_part" and part.pool != "train":
        raise ConfigError(
            "partition.held_out = 'test_part' draws the public and test rows from "
            "the test part, so the pool cannot hold it too: set partition.pool = "
            "'train'"
        )
    return part


def _network(n: dict) -> NetworkConfig:
    _check_keys("network", n, tuple(NetworkConfig.__dataclass_fields__))
    graph = _choice("network.graph", n.get("graph", "gnm"), GRAPHS)
    nodes = _integer("network.nodes", n.get("nodes", 10), minimum=2)
    edges = _integer("network.edges", n["edges"], minimum=1) if "edges" in n else None
    p = as_number("network.p", n["p"], low=0, high=1, low_open=True) if "p" in n else None
    path = n.get("path")
    if path is not None and not isinstance(path, str):
        raise ConfigError(f"network.path must be a file path, got {path!r}")
    need = {"gnm": "edges", "erdos_renyi": "p", "file": "path"}.get(graph)
    if need and n.get(need) is None:
        raise ConfigError(f"network.graph = {graph!r} needs network.{need}")
    for key, value in (("edges", edges), ("p", p), ("path", path)):
        if value is not None and key != need:
            raise ConfigError(f"network.{key} does not apply to graph = {graph!r}")
    if edges is not None:
        pairs = nodes * (nodes - 1) // 2
        if edges > pairs:
            raise ConfigError(f"network.edges = {edges}: a graph on {nodes} nodes has at most {pairs} edges")
        if edges < nodes - 1:
            raise ConfigError(
                f"network.edges = {edges}: a connected graph on {nodes} nodes needs at least {nodes - 1} edges"
            )
    exchange = _choice("network.exchange", n.get("exchange", "plain"), EXCHANGES)
    if exchange == "secret_sharing" and graph != "complete":
        raise ConfigError(
            "network.exchange = 'secret_sharing' needs graph = 'complete' (every agent shares with every other)"
        )
    labels = _choice("network.labels", n.get("labels", "paper01"), LABEL_READINGS)
    return NetworkConfig(graph=graph, nodes=nodes, edges=edges, p=p, path=path, exchange=exchange, labels=labels)


def _solver(s: dict):
    from .registry import get_solver, solver_names

    names = solver_names()
    name = _choice("solver.name", s.get("name", "admm_sharing"), tuple(names))
    cls = get_solver(name)
    declared = [p.name for p in cls.params]
    for key in s:
        if key in ("name", "epochs", *declared):
            continue
        owners = [other for other in names if other != name and key in [p.name for p in get_solver(other).params]]
        valid = ", ".join(["name", "epochs", *declared])
        if owners:
            raise ConfigError(
                f"solver.{key} does not apply to {name} (it is a key of {', '.join(owners)}); its keys: {valid}"
            )
        raise ConfigError(f"unknown key 'solver.{key}'; valid keys in [solver] for {name}: {valid}")
    values = validate_table(
        "solver", {k: v for k, v in s.items() if k not in ("name", "epochs")}, cls.params, owner=name
    )
    epochs = as_integer("solver.epochs", s.get("epochs", 100), low=1, high=MAX_ITERATIONS)
    return cls, SolverConfig(name=name, epochs=epochs, values=values)


_GENERIC_PRIVACY = (
    Param(
        "replayable_noise",
        bool,
        None,
        "draw noise from the seed's streams (a replayable "
        "simulation) instead of OS entropy; default: false when the run claims a guarantee",
    ),
    Param(
        "budget_epsilon",
        float,
        None,
        "privacy budget: `vfl run --stop-at-budget` ends the run before the iteration that would exceed it",
        low=0,
        low_open=True,
    ),
)


def _privacy(pv: dict, cls, solver: SolverConfig) -> PrivacyConfig:
    generic = {p.name for p in _GENERIC_PRIVACY}
    declared = [p.name for p in cls.privacy_params]
    for key in pv:
        if key == "label_epsilon" and key not in declared:
            raise ConfigError(
                f"privacy.label_epsilon: {cls.name} has no label-DP mechanism "
                "(label DP: private_stacking, admm_sharing, fdml_sgd)"
            )
        if key not in declared and key not in generic:
            raise ConfigError(
                f"unknown key 'privacy.{key}'; valid keys in [privacy] for "
                f"{cls.name}: {', '.join([*declared, *sorted(generic)])}"
            )
    values = validate_table(
        "privacy", {k: v for k, v in pv.items() if k not in generic}, cls.privacy_params, owner=cls.name
    )
    g = validate_table("privacy", {k: v for k, v in pv.items() if k in generic}, _GENERIC_PRIVACY, owner=cls.name)
    for key in ("epsilon", "budget_epsilon", "label_epsilon"):
        value = values.get(key, g.get(key))
        if isinstance(value, float):
            check_epsilon(f"privacy.{key}", value)
    try:
        cls.check_config(cls.typed_params(solver.values), cls.typed_privacy(values), solver.epochs)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    claims = bool(cls.claims_guarantee(cls.typed_privacy(values)))
    if g["budget_epsilon"] is not None and not claims:
        raise ConfigError(
            f"privacy.budget_epsilon needs a run that accounts its privacy ({cls.name}: set privacy.delta)"
        )
    replayable = (not claims) if g["replayable_noise"] is None else g["replayable_noise"]
    if claims and not replayable and "accountant" in declared:
        # deployment noise is exact discrete noise (vfl.core.sampling): RDP accounts for it
        if "accountant" not in pv:
            values["accountant"] = "rdp"
        elif values["accountant"] != "rdp":
            raise ConfigError(
                f"privacy.accountant = {values['accountant']!r} composes continuous "
                "Gaussians; a deployment run draws exact discrete noise, accounted "
                'by rdp: set privacy.accountant = "rdp" (or privacy.'
                "replayable_noise = true for a simulation)"
            )
    return PrivacyConfig(
        values=values, replayable_noise=replayable, budget_epsilon=g["budget_epsilon"], claims_guarantee=claims
    )


def config_from_dict(raw: dict, *, default_name: str = "run") -> Config:
    """Validate a raw (TOML-parsed) mapping into a :class:`Config`."""
    if not isinstance(raw, dict):
        raise ConfigError("a config must be a table of tables")
    for key, value in raw.items():
        if key not in _TOP:
            raise ConfigError(f"unknown key '{key}'; valid top-level keys: {', '.join(_TOP)}")
        if key != "name" and not isinstance(value, dict):
            raise ConfigError(f"'{key}' must be a table ([{key}]), got {_typename(value)}")
    tables = {s: raw.get(s, {}) for s in _TOP[1:]}

    config_name = raw.get("name", default_name)
    if (
        not isinstance(config_name, str)
        or not config_name
        or "/" in config_name
        or any(ord(ch) < 32 for ch in config_name)
    ):
        raise ConfigError(f"name must be a non-empty string without '/' or control characters, got {config_name!r}")

    data = _data(tables["data"])
    preprocessing = _preprocessing(tables["preprocessing"])
    cls, solver = _solver(tables["solver"])
    setting = cls.setting
    partition = _partition(tables["partition"], setting, data.dataset == "parties")
    if setting is Setting.NETWORK:
        network = _network(tables["network"])
        # one place for how agents exchange: [network], passed to solvers that declare it
        if "exchange" in tables["solver"]:
            raise ConfigError("set the exchange as network.exchange, not solver.exchange")
        if "exchange" in solver.values:
            solver = replace(solver, values={**solver.values, "exchange": network.exchange})
        elif network.exchange != "plain":
            raise ConfigError(
                f"network.exchange = {network.exchange!r}: {cls.name} cannot use the secret-sharing exchange"
            )
    else:
        if tables["network"]:
            raise ConfigError(f"[network] applies to network solvers only; {cls.name} is {setting.value}")
        network = None

    o = tables["objective"]
    _check_keys("objective", o, tuple(ObjectiveConfig.__dataclass_fields__))
    objective = ObjectiveConfig(
        loss=_choice("objective.loss", o.get("loss", "logistic"), LOSSES),
        reduction=_choice("objective.reduction", o.get("reduction", "sum"), REDUCTIONS),
        lam=_number("objective.lam", o.get("lam", 1e-3), nonneg=True),
        regularizer=_choice("objective.regularizer", o.get("regularizer", "l2sq"), REGULARIZERS),
    )
    if objective.regularizer not in cls.regularizers:
        raise ConfigError(
            f"objective.regularizer = {objective.regularizer!r}: {cls.name} supports {', '.join(cls.regularizers)}"
        )
    if objective.reduction == "unit_mean" and setting is Setting.VERTICAL:
        raise ConfigError(
            "objective.reduction = 'unit_mean' needs data spread over agents (a horizontal or network solver)"
        )
    privacy = _privacy(tables["privacy"], cls, solver)

    r = tables["run"]
    _check_keys("run", r, tuple(RunConfig.__dataclass_fields__))
    run = RunConfig(
        seed=_integer("run.seed", r.get("seed", 0), minimum=0),
        repeats=as_integer("run.repeats", r.get("repeats", 1), low=1, high=MAX_REPEATS),
        eval_every=_integer("run.eval_every", r.get("eval_every", 1), minimum=1),
        baselines=_choice("run.baselines", r.get("baselines", "all"), BASELINE_SETS),
        backend=as_choice("run.backend", r.get("backend", "inprocess"), BACKENDS),
        party_wait=as_number("run.party_wait", r.get("party_wait", 60.0), low=0, high=86400),
        checkpoint_every=_integer("run.checkpoint_every", r.get("checkpoint_every", 10), minimum=0),
        **_services(r),
    )
    if run.backend in ("dask", "services") and data.dataset == "parties" and data.options.get("stratify"):
        raise ConfigError(
            f"run.backend = {run.backend!r} with party files: data.stratify = true "
            "would need every party's labels to split its rows; set it false"
        )
    if run.backend != "services" and (run.parties or run.tls or run.insecure):
        raise ConfigError("run.parties, run.tls and run.insecure apply to run.backend = 'services'")
    if run.backend == "services":
        if not run.parties:
            raise ConfigError("run.backend = 'services' needs run.parties: the parties' addresses HOST:PORT")
        if run.tls is None and not run.insecure:
            raise ConfigError(
                "run.backend = 'services' needs [run.tls] (certificate, key, ca: "
                "`vfl party certs` makes them), or run.insecure = true on "
                "loopback"
            )
    if run.backend == "services" and "services" not in cls.backends:
        raise ConfigError(
            f"run.backend = 'services': {cls.name} does not run as party "
            f"services yet (these do: {', '.join(_dask_solvers('services'))})"
        )
    if run.backend not in cls.backends:
        raise ConfigError(
            f"run.backend = {run.backend!r}: {cls.name} runs in-process only "
            f"(the dask backend runs {', '.join(_dask_solvers())})"
        )
    if run.backend == "services" and privacy.claims_guarantee and "services" not in cls.accounted_backends:
        raise ConfigError(
            f"run.backend = 'services' runs {cls.name} without privacy "
            "accounting at the parties yet: leave privacy.delta unset"
        )
    if run.backend == "dask" and privacy.claims_guarantee and "dask" not in cls.accounted_backends:
        raise ConfigError(
            f"run.backend = 'dask' runs {cls.name} without privacy accounting: "
            "leave privacy.delta unset (accounting mode runs in-process)"
        )

    sw = tables["sweep"]
    _check_keys("sweep", sw, tuple(SweepConfig.__dataclass_fields__))
    sweep = SweepConfig(
        sigmas=check_sigmas(sw.get("sigmas", [0.0]), "sweep.sigmas"),
        seeds=check_seeds(sw.get("seeds", [0]), "sweep.seeds"),
        epsilons=check_epsilons(sw["epsilons"], "sweep.epsilons") if "epsilons" in sw else [],
    )
    if sweep.epsilons and not privacy.claims_guarantee:
        raise ConfigError("sweep.epsilons needs a run that accounts its privacy: set privacy.delta")
    a = tables["audit"]
    _check_keys("audit", a, tuple(AuditConfig.__dataclass_fields__))
    audit = AuditConfig(runs=as_integer("audit.runs", a.get("runs", 100), low=AUDIT_RUNS[0], high=AUDIT_RUNS[1]))
    tuning = _tuning(tables["tuning"])
    if tuning is not None and tuning.private and not privacy.claims_guarantee:
        raise ConfigError(
            "tuning.method = 'private' was charged to a run that claims a "
            "guarantee; this config claims none (privacy.delta unset)"
        )
    return Config(
        name=config_name,
        data=data,
        partition=partition,
        objective=objective,
        solver=solver,
        privacy=privacy,
        run=run,
        sweep=sweep,
        network=network,
        setting=setting,
        preprocessing=preprocessing,
        audit=audit,
        tuning=tuning,
    )


def _services(r: dict) -> dict:
    """``run.parties``, ``run.tls`` and ``run.insecure``, checked."""
    parties = r.get("parties", [])
    if not isinstance(parties, (list, tuple)) or not all(
        isinstance(a, str) and a.rpartition(":")[2].isdigit() for a in parties
    ):
        raise ConfigError(f"run.parties must be a list of addresses HOST:PORT, party 1 first, got {parties!r}")
    tls = r.get("tls")
    if tls is not None:
        if not isinstance(tls, dict):
            raise ConfigError("run.tls must be a table: certificate, key, ca")
        _check_keys("run.tls", tls, TLS_KEYS)
        missing = [k for k in TLS_KEYS if k not in tls]
        if missing:
            raise ConfigError(f"run.tls needs {', '.join(missing)}")
        tls = {k: str(tls[k]) for k in TLS_KEYS}
    insecure = r.get("insecure", False)
    if not isinstance(insecure, bool):
        raise ConfigError(f"run.insecure must be true or false, got {insecure!r}")
    return {"parties": tuple(parties), "tls": tls, "insecure": insecure}


def _dask_solvers(backend: str = "dask") -> list[str]:
    from .registry import SOLVERS, get_solver

    return sorted(name for name in SOLVERS if backend in get_solver(name).backends)


def _preprocessing(table: dict) -> PreprocessingConfig:
    """Keys and types now; sources and columns when the stage meets the data."""
    from vfl.datasets.stage_spec import check_spec

    check_spec(table)
    return PreprocessingConfig(values=dict(table))


def check_sigmas(values, key="--sigmas") -> list[float]:
    """Noise levels: a non-empty list of distinct finite numbers >= 0."""
    if not isinstance(values, list) or not values:
        raise ConfigError(f"{key} must be a non-empty list of numbers, got {values!r}")
    sigmas = [_number(f"{key}[{i}]", v, nonneg=True) for i, v in enumerate(values)]
    if len(set(sigmas)) != len(sigmas):
        raise ConfigError(f"{key} lists a noise level twice: {values!r}")
    return sigmas


def check_epsilons(values, key="--epsilons") -> list[float]:
    """Target epsilons: distinct finite numbers > 0."""
    eps = check_sigmas(values, key)
    bad = [e for e in eps if e <= 0]
    if bad:
        raise ConfigError(f"{key} must be > 0, got {bad[0]:g}")
    return eps


def check_seeds(values, key="--seeds") -> list[int]:
    if not isinstance(values, list) or not values:
        raise ConfigError(f"{key} must be a non-empty list of integers, got {values!r}")
    seeds = [_integer(f"{key}[{i}]", v, minimum=0) for i, v in enumerate(values)]
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"{key} lists a seed twice: {values!r}")
    return seeds


# -- files and overrides ------------------------------------------------------------


def parse_override(text: str) -> tuple[list[str], Any]:
    """Parse ``section.key=value``; the value is read as TOML, else as a string."""
    if "=" not in text:
        raise ConfigError(f"--set expects key=value, got {text!r}")
    key, _, value = text.partition("=")
    path = [k.strip() for k in key.strip().split(".")]
    if not all(path):
        raise ConfigError(f"--set key {key!r} is not a dotted key such as solver.rho")
    try:
        parsed = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()  # bare words such as `squared`
    return path, parsed


def apply_overrides(raw: dict, overrides: list[str]) -> dict:
    """Return a copy of ``raw`` with every ``key=value`` override applied."""
    raw = copy.deepcopy(raw)
    given: dict[tuple, Any] = {}
    for text in overrides:
        path, value = parse_override(text)
        # the last of two values for one key would silently win
        if tuple(path) in given:
            raise ConfigError(
                f"{'.'.join(path)} is given twice ({given[tuple(path)]!r} and "
                f"{value!r}, by --set or an option such as --epochs); give it once"
            )
        given[tuple(path)] = value
        node = raw
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"--set {text!r}: {part!r} is not a table")
            node = child
        node[path[-1]] = value
    return raw


def read_toml(path: str | Path) -> dict:
    path = Path(path)
    try:
        # utf-8-sig: a byte-order mark (as some Windows editors write) is not part of the TOML
        return tomllib.loads(path.read_bytes().decode("utf-8-sig"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"config path is a directory, not a file: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:  # a path under a file, no permission, ...: the OS names it
        raise ConfigError(f"config file {path}: cannot read it ({exc.strerror or exc})") from None


def load_config(path: str | Path, overrides: list[str] = ()) -> Config:
    """Read, override and validate a TOML config file."""
    raw = apply_overrides(read_toml(path), list(overrides))
    try:
        return config_from_dict(raw, default_name=Path(path).stem)
    except ConfigError as exc:
        raise ConfigError(f"{Path(path).name}: {exc}") from None
