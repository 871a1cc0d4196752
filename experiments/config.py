"""Experiment configuration: TOML files, validated into typed dataclasses.

A config has five tables; every key has a default except ``data.dataset``::

    name = "a9a"                 # optional, default: the file's stem

    [data]
    dataset = "a9a"              # a9a | gisette | adult | synthetic
    options = {}                 # dataset options (synthetic sizes, preset, ...)
    # fallback = "synthetic:gisette-shaped"   # only if no file of dataset is present

    [partition]                  # exactly one of columns / ranges / indices
    columns = [66, 57]           # consecutive column counts, party 1 first
    # ranges = [[0, 66], [66, 123]]       # [start, stop) per party
    # indices = [[0, 2, 4], [1, 3, 5]]    # explicit column lists
    intercept = true             # column of ones appended to party 1's block
    allow_unused = false         # columns used by no party are an error
    normalize_rows = false       # each party's rows to unit norm (Assumption 2.3 of Hu et al.)

    [objective]
    loss = "logistic"            # logistic | squared
    reduction = "sum"            # sum | mean (PyTorch's meaning)
    lam = 0.001

    [solver]                     # keys depend on the solver
    name = "admm_sharing"        # admm_sharing | fdml_sgd
    epochs = 100
    rho = 1.0                    # admm_sharing: penalty of (5)
    # fdml_sgd: batch_size, lr, lr_schedule (constant | inv_sqrt | step),
    #           lr_step_epochs, lr_gamma, init_scale

    [privacy]
    sigma = 0.0                  # noise scale; 0 = non-private
    form = "variable"            # admm_sharing: variable | variable_whitened | output
                                 # fdml_sgd: output (noise on the local outputs)
    # accounting mode (admm_sharing, form "output"), see PrivacyConfig:
    # delta = 1e-5; epsilon = 1.0; accountant = "paper" | "pld" | "rdp";
    # delta_prime = 1e-5; b1 = 10.0; budget_epsilon = 8.0;
    # sensitivity = "lemma1" | "data_dependent" (the prototype's; not DP)

    [run]
    seed = 0

Unknown keys are errors that list the valid ones; wrong types name the key.
``--set solver.rho=2`` style overrides go through the same validation.
"""

from __future__ import annotations

import copy
import math
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vfl.core.errors import ConfigError

__all__ = [
    "Config",
    "DataConfig",
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

SOLVERS = ("admm_sharing", "fdml_sgd")
LR_SCHEDULES = ("constant", "inv_sqrt", "step")
ACCOUNTANTS = ("paper", "pld", "rdp")
SENSITIVITIES = ("lemma1", "data_dependent")
NOISE_FORMS = {"admm_sharing": ("variable", "variable_whitened", "output"),
               "fdml_sgd": ("output",)}
# Keys of [solver] each solver understands (besides name and epochs).
SOLVER_KEYS = {
    "admm_sharing": ("rho", "z_tol"),
    "fdml_sgd": ("batch_size", "lr", "lr_schedule", "lr_step_epochs", "lr_gamma", "init_scale"),
}
LOSSES = ("logistic", "squared")
REDUCTIONS = ("sum", "mean")


@dataclass(frozen=True)
class DataConfig:
    dataset: str
    options: dict = field(default_factory=dict)
    # Used only when *none* of the dataset's files is present (never to hide
    # a corrupt file); e.g. "synthetic:gisette-shaped" for gisette.
    fallback: str | None = None


@dataclass(frozen=True)
class PartitionConfig:
    columns: list | None = None
    ranges: list | None = None
    indices: list | None = None
    intercept: bool = True
    allow_unused: bool = False
    normalize_rows: bool = False


@dataclass(frozen=True)
class ObjectiveConfig:
    loss: str = "logistic"
    reduction: str = "sum"
    lam: float = 1e-3


@dataclass(frozen=True)
class SolverConfig:
    name: str = "admm_sharing"
    epochs: int = 100
    # admm_sharing
    rho: float = 1.0
    z_tol: float = 1e-10
    # fdml_sgd (defaults: the authors' batch size; lr and schedule measured on
    # a9a and the gisette-shaped stand-in, see configs/fig1-*-sgd.toml)
    batch_size: int = 100
    lr: float = 0.3
    lr_schedule: str = "inv_sqrt"
    lr_step_epochs: int = 100
    lr_gamma: float = 0.1
    init_scale: float = 0.01

    def params(self) -> dict:
        """Only the keys that apply to this solver, for records."""
        return {"name": self.name, "epochs": self.epochs,
                **{k: getattr(self, k) for k in SOLVER_KEYS[self.name]}}


@dataclass(frozen=True)
class PrivacyConfig:
    """Noise and, when ``delta`` is set, its accounting.

    Without ``delta`` the noise ``sigma`` is applied as given and nothing is
    claimed. With ``delta`` the run is in *accounting mode*: Assumption 2 of
    Hu et al. is made real (rows of each party's block normalized, local
    models projected onto the ball of radius ``b1``), the sensitivity is
    Lemma 1's, and every epoch records the epsilon spent. ``epsilon`` then
    calibrates sigma: per iteration by Theorem 1 (``accountant = "paper"``,
    epsilon in (0, 1]) or as the total over the planned epochs (``"pld"``,
    ``"rdp"``).
    """

    sigma: float = 0.0
    form: str = "variable"  # the solver's first form when not given (fdml_sgd: "output")
    epsilon: float | None = None
    delta: float | None = None
    accountant: str = "paper"
    delta_prime: float | None = None  # Corollary 1's delta'; default: delta
    b1: float = 10.0
    budget_epsilon: float | None = None
    # "lemma1": the worst-case bound (a DP guarantee); "data_dependent": the
    # authors' prototype, Lemma 1 with b1 replaced by the current iterates'
    # norms (sigma then depends on private data: NOT a DP guarantee).
    sensitivity: str = "lemma1"

    @property
    def accounting(self) -> bool:
        return self.delta is not None

    @property
    def private(self) -> bool:
        return self.sigma > 0 or self.epsilon is not None


@dataclass(frozen=True)
class RunConfig:
    seed: int = 0


@dataclass(frozen=True)
class SweepConfig:
    """Defaults of ``vfl sweep-noise`` for this config (the CLI may override)."""

    sigmas: list = field(default_factory=lambda: [0.0])
    seeds: list = field(default_factory=lambda: [0])
    # target epsilons (accounting mode); when given, the sweep is over them
    epsilons: list = field(default_factory=list)


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

    def to_dict(self) -> dict:
        """The fully resolved config (every default filled in), JSON-ready.

        ``solver`` lists only the keys of the chosen solver.
        """
        d = asdict(self)
        d["solver"] = self.solver.params()
        return d


# -- validation helpers ---------------------------------------------------------

_SECTIONS = {
    "data": DataConfig,
    "partition": PartitionConfig,
    "objective": ObjectiveConfig,
    "solver": SolverConfig,
    "privacy": PrivacyConfig,
    "run": RunConfig,
    "sweep": SweepConfig,
}


def _typename(value) -> str:
    return type(value).__name__


def _number(key, value, *, positive=False, nonneg=False) -> float:
    # bool is an int subclass; `rho = true` is a mistake, not 1.0.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{key} must be a number, got {value!r} ({_typename(value)})")
    value = float(value)
    if not math.isfinite(value):
        raise ConfigError(f"{key} must be finite, got {value!r}")
    if positive and value <= 0:
        raise ConfigError(f"{key} must be > 0, got {value:g}")
    if nonneg and value < 0:
        raise ConfigError(f"{key} must be >= 0, got {value:g}")
    return value


def _integer(key, value, *, minimum=None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key} must be an integer, got {value!r} ({_typename(value)})")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{key} must be >= {minimum}, got {value}")
    return value


def _choice(key, value, choices) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{key} must be a string, got {value!r} ({_typename(value)})")
    if value not in choices:
        raise ConfigError(f"{key} = {value!r} is not one of: {', '.join(choices)}")
    return value


def _boolean(key, value) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false, got {value!r} ({_typename(value)})")
    return value


def _int_list(key, value, depth: int) -> list:
    """A list (depth 1) or list of lists (depth 2) of integers."""
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{key} must be a non-empty list, got {value!r}")
    if depth == 1:
        return [_integer(f"{key}[{i}]", v) for i, v in enumerate(value)]
    return [_int_list(f"{key}[{i}]", v, 1) for i, v in enumerate(value)]


def _check_keys(section: str, table: dict, cls) -> None:
    valid = [f for f in cls.__dataclass_fields__]
    for key in table:
        if key not in valid:
            raise ConfigError(
                f"unknown key '{section}.{key}'; valid keys in [{section}]: {', '.join(valid)}"
            )


def config_from_dict(raw: dict, *, default_name: str = "run") -> Config:
    """Validate a raw (TOML-parsed) mapping into a :class:`Config`."""
    if not isinstance(raw, dict):
        raise ConfigError("a config must be a table of tables")
    valid_top = ["name", *_SECTIONS]
    for key, value in raw.items():
        if key not in valid_top:
            raise ConfigError(f"unknown key '{key}'; valid top-level keys: {', '.join(valid_top)}")
        if key != "name" and not isinstance(value, dict):
            raise ConfigError(f"'{key}' must be a table ([{key}]), got {_typename(value)}")
    tables = {s: raw.get(s, {}) for s in _SECTIONS}
    for section, cls in _SECTIONS.items():
        if section != "solver":  # its keys depend on solver.name, checked below
            _check_keys(section, tables[section], cls)

    config_name = raw.get("name", default_name)
    if not isinstance(config_name, str) or not config_name or "/" in config_name:
        raise ConfigError(f"name must be a non-empty string without '/', got {config_name!r}")

    d = tables["data"]
    if "dataset" not in d:
        raise ConfigError("data.dataset is required (e.g. dataset = \"a9a\")")
    if not isinstance(d["dataset"], str):
        raise ConfigError(f"data.dataset must be a string, got {d['dataset']!r}")
    options = d.get("options", {})
    if not isinstance(options, dict):
        raise ConfigError(f"data.options must be a table, got {_typename(options)}")
    fallback = d.get("fallback")
    if fallback is not None and not isinstance(fallback, str):
        raise ConfigError(f"data.fallback must be a dataset name, got {fallback!r}")
    data = DataConfig(dataset=d["dataset"], options=dict(options), fallback=fallback)

    p = tables["partition"]
    given = [k for k in ("columns", "ranges", "indices") if k in p]
    if len(given) != 1:
        raise ConfigError(
            "partition needs exactly one of columns, ranges, indices"
            + (f"; got {', '.join(given)}" if given else "")
        )
    partition = PartitionConfig(
        columns=_int_list("partition.columns", p["columns"], 1) if "columns" in p else None,
        ranges=_int_list("partition.ranges", p["ranges"], 2) if "ranges" in p else None,
        indices=_int_list("partition.indices", p["indices"], 2) if "indices" in p else None,
        intercept=_boolean("partition.intercept", p.get("intercept", True)),
        allow_unused=_boolean("partition.allow_unused", p.get("allow_unused", False)),
        normalize_rows=_boolean("partition.normalize_rows", p.get("normalize_rows", False)),
    )

    o = tables["objective"]
    objective = ObjectiveConfig(
        loss=_choice("objective.loss", o.get("loss", "logistic"), LOSSES),
        reduction=_choice("objective.reduction", o.get("reduction", "sum"), REDUCTIONS),
        lam=_number("objective.lam", o.get("lam", 1e-3), nonneg=True),
    )

    s = tables["solver"]
    name = _choice("solver.name", s.get("name", "admm_sharing"), SOLVERS)
    valid = ("name", "epochs", *SOLVER_KEYS[name])
    for key in s:
        if key in valid:
            continue
        if key in SolverConfig.__dataclass_fields__:
            raise ConfigError(f"solver.{key} does not apply to {name}; its keys: {', '.join(valid)}")
        raise ConfigError(
            f"unknown key 'solver.{key}'; valid keys in [solver] for {name}: {', '.join(valid)}")
    d = SolverConfig()
    solver = SolverConfig(
        name=name,
        epochs=_integer("solver.epochs", s.get("epochs", d.epochs), minimum=1),
        rho=_number("solver.rho", s.get("rho", d.rho), positive=True),
        z_tol=_number("solver.z_tol", s.get("z_tol", d.z_tol), positive=True),
        batch_size=_integer("solver.batch_size", s.get("batch_size", d.batch_size), minimum=1),
        lr=_number("solver.lr", s.get("lr", d.lr), positive=True),
        lr_schedule=_choice("solver.lr_schedule", s.get("lr_schedule", d.lr_schedule), LR_SCHEDULES),
        lr_step_epochs=_integer("solver.lr_step_epochs", s.get("lr_step_epochs", d.lr_step_epochs),
                                minimum=1),
        lr_gamma=_number("solver.lr_gamma", s.get("lr_gamma", d.lr_gamma), positive=True),
        init_scale=_number("solver.init_scale", s.get("init_scale", d.init_scale), nonneg=True),
    )

    privacy = _privacy(tables["privacy"], name)

    r = tables["run"]
    run = RunConfig(seed=_integer("run.seed", r.get("seed", 0), minimum=0))

    sw = tables["sweep"]
    sweep = SweepConfig(
        sigmas=check_sigmas(sw.get("sigmas", [0.0]), "sweep.sigmas"),
        seeds=check_seeds(sw.get("seeds", [0]), "sweep.seeds"),
        epsilons=check_epsilons(sw["epsilons"], "sweep.epsilons") if "epsilons" in sw else [],
    )
    if sweep.epsilons and not privacy.accounting:
        raise ConfigError("sweep.epsilons needs accounting mode: set privacy.delta")
    return Config(name=config_name, data=data, partition=partition, objective=objective,
                  solver=solver, privacy=privacy, run=run, sweep=sweep)


def _privacy(pv: dict, solver: str) -> PrivacyConfig:
    forms = NOISE_FORMS[solver]

    def opt(key, **kw):
        return None if pv.get(key) is None else _number(f"privacy.{key}", pv[key], **kw)

    delta = opt("delta", positive=True)
    if delta is not None and delta >= 1:
        raise ConfigError(f"privacy.delta must be in (0, 1), got {delta:g}")
    delta_prime = opt("delta_prime", positive=True)
    if delta_prime is not None and delta_prime >= 1:
        raise ConfigError(f"privacy.delta_prime must be in (0, 1), got {delta_prime:g}")
    accounting = delta is not None
    # Accounting needs an isotropic Gaussian on the shared value (Theorem 1).
    form_default = "output" if accounting else forms[0]
    p = PrivacyConfig(
        sigma=_number("privacy.sigma", pv.get("sigma", 0.0), nonneg=True),
        form=_choice("privacy.form", pv.get("form", form_default), forms),
        epsilon=opt("epsilon", positive=True),
        delta=delta,
        accountant=_choice("privacy.accountant", pv.get("accountant", "paper"), ACCOUNTANTS),
        delta_prime=delta_prime,
        b1=_number("privacy.b1", pv.get("b1", 10.0), positive=True),
        budget_epsilon=opt("budget_epsilon", positive=True),
        sensitivity=_choice("privacy.sensitivity", pv.get("sensitivity", "lemma1"), SENSITIVITIES),
    )
    if p.epsilon is not None and "sigma" in pv:
        raise ConfigError("give privacy.sigma or privacy.epsilon, not both (epsilon calibrates sigma)")
    if not accounting:
        for key in ("epsilon", "budget_epsilon", "delta_prime", "sensitivity"):
            if pv.get(key) is not None:
                raise ConfigError(f"privacy.{key} needs privacy.delta (accounting mode)")
        return p
    if solver != "admm_sharing":
        raise ConfigError("privacy accounting (privacy.delta) is implemented for admm_sharing only")
    if p.form != "output":
        raise ConfigError(
            f"privacy.form = {p.form!r} cannot be accounted: Theorem 1 analyses Gaussian noise "
            "N(0, sigma^2 I) on the shared value, i.e. form = 'output'")
    if p.sensitivity == "data_dependent" and (p.accountant != "paper" or p.epsilon is None):
        raise ConfigError("privacy.sensitivity = 'data_dependent' recomputes sigma every epoch from "
                          "Theorem 1: it needs accountant = 'paper' and a per-iteration privacy.epsilon")
    if p.accountant == "paper" and p.epsilon is not None and p.epsilon > 1:
        raise ConfigError(
            f"privacy.epsilon = {p.epsilon:g}: with accountant = 'paper' it is the per-iteration "
            "epsilon of Theorem 1, which holds only for epsilon in (0, 1]")
    return p


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
    for text in overrides:
        path, value = parse_override(text)
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
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"config path is a directory, not a file: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file") from None


def load_config(path: str | Path, overrides: list[str] = ()) -> Config:
    """Read, override and validate a TOML config file."""
    raw = apply_overrides(read_toml(path), list(overrides))
    try:
        return config_from_dict(raw, default_name=Path(path).stem)
    except ConfigError as exc:
        raise ConfigError(f"{Path(path).name}: {exc}") from None
