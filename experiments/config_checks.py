"""Each section of a raw (TOML-parsed) config checked into its typed section
(:mod:`vfl.experiments.config_sections`): unknown keys listed with the valid ones, wrong types
named by key, a solver's and its privacy's keys checked against its declarations."""

from __future__ import annotations

from vfl.core.errors import ConfigError
from vfl.core.params import (
    MAX_ITERATIONS,
    Param,
    as_boolean,
    as_choice,
    as_integer,
    as_number,
    check_epsilon,
    validate_table,
)
from vfl.core.solver import Setting
from vfl.datasets import REGISTRY, SYNTHETIC_PRESETS
from vfl.datasets.parties.party_spec import DATA_KEYS, check_parties
from vfl.datasets.stage import check_spec

from .config_sections import (
    EXCHANGES,
    FILE_DATA_KEYS,
    FILE_DATASETS,
    GRAPHS,
    HELD_OUT,
    LABEL_READINGS,
    MOVED_KEYS,
    POOLS,
    ROW_PARTITION_KEYS,
    TLS_KEYS,
    TUNING_METHODS,
    VERTICAL_PARTITION_KEYS,
    DataConfig,
    NetworkConfig,
    PartitionConfig,
    PreprocessingConfig,
    PrivacyConfig,
    SolverConfig,
    TuningConfig,
)
from .registry import SOLVERS, get_solver, solver_names


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

    return sorted(name for name in SOLVERS if backend in get_solver(name).backends)


def _preprocessing(table: dict) -> PreprocessingConfig:
    """Keys and types now; sources and columns when the stage meets the data."""

    check_spec(table)
    return PreprocessingConfig(values=dict(table))
