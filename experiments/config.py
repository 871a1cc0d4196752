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
    MAX_REPEATS,
    as_choice,
    as_integer,
    as_number,
)
from vfl.core.solver import Setting

from .config_checks import (
    _check_keys,
    _choice,
    _dask_solvers,
    _data,
    _integer,
    _network,
    _number,
    _partition,
    _preprocessing,
    _privacy,
    _services,
    _solver,
    _tuning,
    _typename,
)
from .config_sections import (
    _RUN_KEYS_IF_SET,
    AUDIT_RUNS,
    BACKENDS,
    BASELINE_SETS,
    LOSSES,
    REDUCTIONS,
    REGULARIZERS,
    AuditConfig,
    DataConfig,
    NetworkConfig,
    ObjectiveConfig,
    PartitionConfig,
    PreprocessingConfig,
    PrivacyConfig,
    RunConfig,
    SolverConfig,
    SweepConfig,
    TuningConfig,
)

__all__ = [
    "Config",
    "apply_overrides",
    "check_epsilons",
    "check_seeds",
    "check_sigmas",
    "config_from_dict",
    "load_config",
    "parse_override",
    "read_toml",
]


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
