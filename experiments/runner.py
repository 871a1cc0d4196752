"""Config -> data -> distribution -> solver -> records, in memory, for any registered solver.

:func:`plan_run` does every check a run needs (config, data, distribution,
solver construction, privacy plan) before any expensive work;
:func:`run_experiment` then runs it (``run.repeats`` times) and returns a
:class:`RunResult`. Writing it to disk is :mod:`vfl.experiments.records`'
job, drawing it the presentation layer's. Nothing here knows an algorithm
by name: everything comes from the solver class's declarations
(:mod:`vfl.core.solver`).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from time import perf_counter
from typing import Any

import numpy as np
import pandas as pd

from vfl.core.column_kinds import DIAGNOSTIC, RELEASED, column_kinds
from vfl.core.errors import ConfigError, DivergedError
from vfl.core.metrics import accuracy, log_loss
from vfl.core.protocol import NonFiniteError
from vfl.core.relations import Cleaning, stated_on
from vfl.core.solver import Solver
from vfl.core.streams import Streams
from vfl.datasets import REGISTRY, dataset_status, resolve_data_dir
from vfl.datasets.base import RawDataset
from vfl.datasets.loaders import load_raw

from .config import Config
from .diagnostic import drop_diagnostic, exact_data, labelled_diagnostic
from .manifest import DatasetRecord, Manifest
from .provenance import environment_info
from .registry import get_solver, typed_privacy
from .repeats import Repeats
from .settings import prepare

__all__ = [
    "RunResult",
    "RunPlan",
    "plan_run",
    "run_experiment",
    "load_config_dataset",
    "BASE_COLUMNS",
    "compute_baselines",
]

#: columns every run has, first, in this order (``objective`` and
#: ``suboptimality`` only when the solver reports an objective)
BASE_COLUMNS = [
    "epoch",
    "objective",
    "suboptimality",
    "train_logloss",
    "test_logloss",
    "train_accuracy",
    "test_accuracy",
]
PRIVACY_COLUMNS = ["epsilon_paper", "epsilon_tight", "delta_paper", "delta_tight", "epsilon_labels", "delta_labels"]
#: cumulative communication, every message counted once (:mod:`vfl.core.wire`)
COMMUNICATION_COLUMNS = ["messages", "bytes"]
#: communication.csv: per repeat, phase, iteration and unit (unit 0 is the hub); phase
#: "training" is the protocol's iterations, "inference" one scoring of the test rows with the
#: final model (the solver's :class:`~vfl.core.wire.Inference`, at the last iteration)
COMMUNICATION_FILE_COLUMNS = [
    "repeat",
    "phase",
    "epoch",
    "unit",
    "sent_messages",
    "sent_bytes",
    "received_messages",
    "received_bytes",
]
PHASES = ("training", "inference", "alignment", "diagnostics")


@dataclass
class RunResult:
    config: Config
    manifest: Manifest  # manifest.json (validated: :mod:`.manifest`)
    metrics: pd.DataFrame  # one row per iteration (the mean over repeats)
    baselines: dict
    coef: Any = None  # the final model (all parties' blocks concatenated, or the global model)
    repeats: pd.DataFrame | None = None  # per-repeat rows, when run.repeats > 1
    #: per repeat, iteration and unit: what the protocol sent and received (communication.csv)
    communication: pd.DataFrame | None = None
    #: the privacy ledger of the run (every repeat composed), or None
    ledger: Any = None


_DATASETS: dict = {}  # (dataset, options, data dir) -> loaded, within one process


def load_config_dataset(
    config: Config, data_dir=None, *, keep: bool = True, use_cache: bool = True
) -> tuple[RawDataset, str | None]:
    """Read ``config.data`` (raw records, before the preprocessing stage); returns them and,
    if the fallback was used, a sentence saying why. Loaded datasets are kept for the life of
    the process (figure reproductions run many configs on the same data); files are re-hashed
    on every load, so a changed file is never served from memory. ``keep=False`` (one run
    that needs its memory for the parties' blocks): the records are not kept, and a kept copy
    of them is let go once served. ``use_cache=False``: the files are parsed without the
    parsed-array cache of the user cache directory (nothing read from it or left there)."""
    import json

    key = json.dumps(
        [
            config.data.dataset,
            config.data.options,
            config.data.fallback,
            str(resolve_data_dir(data_dir)),
            _split_seed(config),
            _strict(config),
            _alignment_options(config) if config.data.dataset == "parties" else None,
        ],
        sort_keys=True,
        default=str,
    )
    stamp = _file_stamp(config, data_dir)
    hit = _DATASETS.pop(key, None) if not keep else _DATASETS.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    _DATASETS.clear()  # one dataset at a time: they can be large
    loaded = _load_config_dataset(config, data_dir, use_cache)
    if keep:
        _DATASETS[key] = (stamp, loaded)
    return loaded


def _split_seed(config: Config):
    """The seed the loaded records depend on: run.seed only for a user file split at random
    without its own ``split_seed`` (a sweep over seeds then loads every other dataset once)."""
    d = config.data
    if d.dataset in ("libsvm", "csv", "parties") and "test_fraction" in d.options and "split_seed" not in d.options:
        return config.run.seed
    return None


def _file_stamp(config: Config, data_dir):
    """Sizes and mtimes of the files a dataset reads (None for generated data).

    A user file is named by a path relative to the working directory: the same
    option may name another file, or a rewritten one, later in the process."""
    import os

    if config.data.dataset not in REGISTRY:
        tables = config.data.options.get("party") or [config.data.options]
        paths = [t.get(k) for t in tables if isinstance(t, dict) for k in ("path", "test_path")]
        return tuple((os.path.abspath(p), *_stat(p).values()) for p in paths if isinstance(p, str)) or None
    return tuple(
        (f.get("path"), f.get("size"), f.get("mtime"))
        for f in ({**f, **_stat(f.get("path"))} for f in dataset_status(config.data.dataset, data_dir))
    )


def _stat(path):
    import os

    try:
        st = os.stat(path)
        return {"size": st.st_size, "mtime": st.st_mtime_ns}
    except (OSError, TypeError):
        return {}


def _strict(config: Config) -> bool:
    """Whether the files are read strictly: a malformed record stops a run that claims no
    guarantee with one line naming it; in a run that claims one, every record is a row and
    nothing a record holds stops the run (:func:`vfl.datasets.loaders.load_raw`)."""
    return not config.privacy.claims_guarantee


def _load_config_dataset(config: Config, data_dir=None, use_cache: bool = True) -> tuple[RawDataset, str | None]:
    d = config.data
    if d.fallback and d.dataset in REGISTRY:
        if not any(f["present"] for f in dataset_status(d.dataset, data_dir)):
            note = f"no {d.dataset} file in {resolve_data_dir(data_dir)}; used data.fallback = {d.fallback!r}"
            return load_raw(d.fallback), note
    options = dict(d.options)
    if _split_seed(config) is not None:
        options["split_seed"] = config.run.seed
    if d.dataset == "parties":
        options["alignment"] = _alignment_options(config)
    return load_raw(d.dataset, data_dir, options=options, strict=_strict(config), use_cache=use_cache), None


def _alignment_options(config: Config) -> dict:
    """Party files: the agreed row order's key comes from the run's seed in a replayable
    run (a simulation replays bit for bit), from OS entropy in a deployment."""
    given = dict(config.data.options.get("alignment", {}))
    if config.privacy.replayable_noise and "seed" not in given:
        given["seed"] = config.run.seed
    return given


def _alignment_traffic(info: dict | None) -> list:
    """communication.csv rows of phase ``alignment`` (repeat 0, iteration 0): what the
    parties' PSI and agreement sent, per party (unit m is party m; the hub sends nothing)."""
    from vfl.core.wire import Traffic

    aligned = DatasetRecord.alignment_in(info)
    rows = []
    for part in aligned.values():
        t = {k: np.asarray(v, dtype=np.int64) for k, v in part["traffic"].items()}
        rows.append(
            _traffic_rows(
                Traffic(t["sent_messages"], t["sent_bytes"], t["received_messages"], t["received_bytes"], 0, 0, 0, 0),
                0,
                0,
                phase=PHASES.index("alignment"),
            )
        )
    return rows


@dataclass
class RunPlan:
    """Everything a run needs, checked; built by :func:`plan_run`."""

    config: Config
    solver_cls: type
    #: the records as read (``setting.dataset`` after the column steps); None when the plan
    #: does not keep them (``plan_run(keep_records=False)``)
    dataset: RawDataset | None
    fallback_note: str | None
    setting: Any
    first: Any  # the Prepared data of repeat 0
    solver: Solver  # repeat 0's solver, constructed (its construction validates)
    #: where the units run when not in this process (:mod:`vfl.experiments.transport.dask_units`)
    backend: Any = None
    #: the manifest's ``dataset`` section (what the records were: name, sizes, checksums)
    dataset_info: dict | None = None
    #: the public rule that removed records before the mechanism (the relation is then on
    #: the cleaned file), or None
    cleaning: Cleaning | None = None


def _streams(config: Config, repeat: int) -> Streams:
    # a run that claims a guarantee and cannot be replayed is a deployment: exact noise
    exact = config.privacy.claims_guarantee and not config.privacy.replayable_noise
    return Streams(config.run.seed, repeat=repeat, replayable_noise=config.privacy.replayable_noise, exact_noise=exact)


#: the record / replay hook of :mod:`vfl.experiments.released` (None in every ordinary run):
#: its ``prepared(cls, prepared, privacy)`` gives each repeat's data, and its ``observer``
#: releases for every solver built
_TAP = None


def _build(cls, config: Config, prepared, streams: Streams, backend=None) -> Solver:
    data = prepared.data if backend is None else backend.data(prepared, streams.repeat)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # overflow in setup is a user error
            solver = cls.build(
                data,
                objective=prepared.objective,
                params=cls.typed_params(config.solver.values),
                privacy=cls.typed_privacy(config.privacy.values),
                streams=streams,
                iterations=config.solver.epochs,
            )
    except (ValueError, RuntimeWarning, np.linalg.LinAlgError, OverflowError) as exc:
        raise ConfigError(f"{config.solver.name}: {exc}") from None
    if _TAP is not None:
        solver.observer = _TAP.observer
    return solver


def _prepare(setting, config: Config, repeat: int):
    """One repeat's distribution of the data; an impossible one is a user error."""
    try:
        prepared = setting.prepare(_streams(config, repeat))
    except ValueError as exc:
        raise ConfigError(f"{config.setting.value} setting: {' '.join(str(exc).split())}") from None
    if _TAP is not None:
        prepared = _TAP.prepared(get_solver(config.solver.name), prepared, dict(config.privacy.values))
    return prepared


def check_run_options(
    config: Config, *, stop_at_budget: bool, release_only: bool, use_cache: bool, record_received: bool = False
) -> None:
    """`vfl run`'s flags against the config, before any work: one that would have no
    effect is refused, not silently ignored."""
    if record_received:
        from .received import Received

        Received(config)  # (a vertical solver, or one line now)
    if stop_at_budget and config.privacy.budget_epsilon is None:
        raise ConfigError("--stop-at-budget needs privacy.budget_epsilon in the config")
    if release_only and not config.privacy.claims_guarantee:
        raise ConfigError(
            f"--release-only applies to a run that claims a privacy guarantee ({config.solver.name}: set privacy.delta)"
        )
    if not use_cache and release_only:
        raise ConfigError("--no-cache has no effect with --release-only (it computes no baseline and leaves no cache)")
    if not use_cache and config.run.baselines == "none":
        raise ConfigError(
            "--no-cache has no effect with run.baselines = 'none' (no baseline is computed, cached or not)"
        )


def plan_run(
    config: Config,
    data_dir=None,
    backend=None,
    *,
    keep_records: bool = True,
    use_cache: bool = True,
    raw: RawDataset | None = None,
) -> RunPlan:
    """Load and distribute the data and construct the solver: every user error surfaces here.

    With a ``backend`` (``run.backend = "dask"``: a connected
    :class:`~vfl.experiments.transport.dask_units.DaskUnits`), each unit's actor (a party, a group of
    providers) reads its own data on its worker, checked against what was read here.

    ``keep_records=False`` (one run, as ``vfl run`` and the scale benchmark do): the records
    as read are let go once the setting has distributed them (neither the plan nor the
    process's dataset cache keeps them), so a vertical run holds the parties' blocks only.
    ``use_cache=False`` (a release-only run): the data are parsed without the user cache's
    parsed arrays, so the run leaves nothing outside its run directory.
    """
    if config.run.backend != "inprocess" and backend is None:  # never run in-process silently
        raise ConfigError(
            f"run.backend = {config.run.backend!r} runs through `vfl run` (with "
            "--cluster, or a local cluster it starts); sweeps, audits and figure "
            "runs are in-process: leave run.backend unset"
        )
    cls = get_solver(config.solver.name)
    # ``raw``: records read already (vfl tune's rows declared public), else the config's data
    if backend is not None and config.data.dataset == "parties" and raw is None:
        # party files elsewhere: the coordinator reads party 1's file alone, and the PSI runs
        # with every party's own process over its channel (vfl.experiments.party_sides)
        from .party_sides import LabelHolderSetting, own_setting

        dataset, note = backend.align_parties(config, cls), None
        setting = own_setting(config, dataset, cls, 1, LabelHolderSetting)
        setting.widths = backend.send_widths(int(setting._train[0].shape[1]))
    else:
        dataset, note = (
            (raw, None)
            if raw is not None
            else load_config_dataset(config, data_dir, keep=keep_records, use_cache=use_cache)
        )
        setting = prepare(config, dataset, cls)
    info = _dataset_info(dataset, note, setting)
    checksums = dataset.checksums  # the workers check their reads against these
    first = _prepare(setting, config, 0)
    if backend is not None:
        backend.use_cache = use_cache
        backend.start(first, checksums)
    cleaning = dataset.cleaning
    if not keep_records:
        dataset = None  # the setting holds what the run needs (a vertical one: the blocks)
    solver = _build(cls, config, first, _streams(config, 0), backend)
    return RunPlan(config, cls, dataset, note, setting, first, solver, backend, info, cleaning)


def _dataset_info(dataset: RawDataset, note: str | None, setting) -> dict:
    """The manifest's ``dataset`` section. Its ``diagnostic`` entry (the manifest moves it to
    its ``diagnostic`` section) holds what depends on the private records themselves: the
    private files' sha256 and sizes and the loader's data-dependent counts (see
    :func:`~vfl.experiments.diagnostic.exact_data`)."""
    provenance = copy.deepcopy(dataset.provenance)
    public, exact = exact_data(dataset, provenance)
    return {
        "name": dataset.name,
        "description": dataset.description,
        "stand_in": dataset.is_stand_in,
        "fallback": note,
        "n_train": int(dataset.train.n_rows),
        "n_test": int(dataset.test.n_rows),
        "n_features": int(setting.n_features),
        "sha256": public,
        "provenance": provenance,
        "diagnostic": exact,
    }


def compute_baselines(plan: RunPlan, prepared=None, *, use_cache: bool = True) -> dict:
    return plan.setting.baselines(prepared or plan.first, use_cache=use_cache)


def _evaluate(solver: Solver, prepared) -> dict:
    u_train = solver.train_margins()
    u_test = solver.decision_function(prepared.test)
    return {
        "train_logloss": log_loss(u_train, prepared.y_train),
        "test_logloss": log_loss(u_test, prepared.y_test),
        "train_accuracy": accuracy(u_train, prepared.y_train),
        "test_accuracy": accuracy(u_test, prepared.y_test),
    }


def deployment(config: Config) -> bool:
    """A deployment run: every party its own service, drawing exact noise that is never
    replayed; no exact value leaves a party, so the run records what the coordinator
    computes from the released values alone (:meth:`~vfl.core.solver.Solver.released_metrics`)
    and scores the test rows once, with the final model."""
    return config.run.backend == "services" and config.privacy.claims_guarantee and not config.privacy.replayable_noise


#: what a deployment run cannot record: the diagnostics that need exact values
UNAVAILABLE_IN_DEPLOYMENT = (
    "objective",
    "suboptimality",
    "dual_residual",
    "train_logloss",
    "train_accuracy",
    "the test metrics before the last epoch",
    "the model's coefficients (coef.npy)",
    "the references",
)


def _score(solver: Solver, prepared) -> dict:
    """The test metrics of the current model: one scoring of the test rows (inference)."""
    u_test = solver.decision_function(prepared.test)
    return {"test_logloss": log_loss(u_test, prepared.y_test), "test_accuracy": accuracy(u_test, prepared.y_test)}


def _ledger(config: Config):
    p = typed_privacy(config)
    delta = getattr(p, "delta", None)
    if not config.privacy.claims_guarantee or delta is None:
        return None  # (a run may claim label DP alone)
    from vfl.core.ledger import PrivacyLedger

    ledger = PrivacyLedger(delta, getattr(p, "accountant", "pld"))
    if config.tuning is not None and config.tuning.private:  # spent before the run
        from vfl.privacy.tuning import tuning_rdp

        t = config.tuning.values
        ledger.add_rdp(tuning_rdp(ledger.orders, t["trial_mu"], t["eta"], t["gamma"]))
    return ledger


def _label_ledger(config: Config, cls):
    """The label relation's ledger (:data:`~vfl.core.relations.LABELS`), or None."""
    p = cls.typed_privacy(config.privacy.values)
    if not cls.claims_label_guarantee(p):
        return None
    from vfl.core.ledger import PrivacyLedger

    label_delta = getattr(p, "label_delta", None)
    return PrivacyLedger(
        label_delta or 0.0, getattr(p, "accountant", "pld") if label_delta else "rdp", relation="labels"
    )


def _privacy_row(solver: Solver, ledger, labels=None) -> dict:
    label = {} if labels is None else {"epsilon_labels": labels.epsilon(), "delta_labels": labels.delta}
    if ledger is None:
        return label
    paper = solver.paper_epsilon()
    return {
        "epsilon_paper": float("nan") if paper is None else paper[0],
        "epsilon_tight": ledger.epsilon(),
        "delta_paper": float("nan") if paper is None else paper[1],
        "delta_tight": ledger.delta,
        **{f"epsilon_{name}": eps for name, (eps, _) in solver.other_claims().items()},
        **label,
    }


def _same_epsilon(now: dict, then: dict) -> bool:
    """The ledger replayed to a checkpoint spent what the checkpoint's row says, to the bit."""
    return all(
        now[k] == then[k] or (np.isnan(now[k]) and np.isnan(then[k]))
        for k in ("epsilon_tight", "epsilon_labels")
        if k in now and k in then
    )


def _divergence(config: Config, solver: Solver, value, message: str | None = None) -> DivergedError:
    if message is not None:  # a non-finite message of the iteration in progress, refused
        msg = f"{config.solver.name} diverged at {solver.iteration_name} {solver.iteration + 1} ({message})"
    else:
        msg = f"{config.solver.name} diverged at {solver.iteration_name} {solver.iteration} (objective {value})"
    hint = solver.divergence_hint()
    return DivergedError(msg + (f"; {hint}" if hint else ""))


def _sessions(solver) -> list:
    """The unit sessions a solver's seams hold (``solver.parties.session``, ...)."""
    from vfl.core.units import Session

    return [v.session for v in vars(solver).values() if isinstance(getattr(v, "session", None), Session)]


def _diagnostic_rows(solver, repeat: int) -> list[np.ndarray]:
    """A repeat's diagnostics as communication.csv rows: the hub, then each host (as its
    first unit; a group of providers or agents answers in one message)."""
    out = []
    for session in _sessions(solver):
        d = session.diagnostics
        if not d.any():
            continue
        table = np.empty((session.n + 1, len(COMMUNICATION_FILE_COLUMNS)), dtype=np.int64)
        table[:, 0], table[:, 1], table[:, 2] = repeat, PHASES.index("diagnostics"), solver.iteration
        table[0, 3], table[1:, 3] = 0, [a + 1 for a, _ in session.hosts]
        table[0, 4:] = d.sum(axis=0)  # the hub sends the requests and receives the replies
        table[1:, 4:] = d[:, [2, 3, 0, 1]]
        out.append(table)
    return out


def _traffic_rows(traffic, repeat: int, epoch: int, phase: int = 0) -> np.ndarray:
    """One iteration's :class:`~vfl.core.wire.Traffic` as communication.csv rows (hub first);
    ``phase`` indexes :data:`PHASES`."""
    units = len(traffic.sent_messages)
    table = np.empty((units + 1, len(COMMUNICATION_FILE_COLUMNS)), dtype=np.int64)
    table[:, 0], table[:, 1], table[:, 2], table[:, 3] = repeat, phase, epoch, np.arange(units + 1)
    table[0, 4:] = (
        traffic.hub_sent_messages,
        traffic.hub_sent_bytes,
        traffic.hub_received_messages,
        traffic.hub_received_bytes,
    )
    table[1:, 4:] = np.stack(
        [traffic.sent_messages, traffic.sent_bytes, traffic.received_messages, traffic.received_bytes], axis=1
    )
    return table


def _run_one(
    config: Config,
    solver: Solver,
    prepared,
    f_star: float,
    *,
    repeat: int,
    on_epoch,
    stop_at_budget: bool,
    repeats: Repeats,
    resume=None,
    checkpoint=None,
) -> tuple[list[dict], dict | None, float, list]:
    """Iterate one solver; returns its rows, the budget stop (if any), solver seconds and its
    communication per iteration and unit. Its ledger and releases go to ``repeats`` (which
    also says what the earlier repeats spent, when a deployment composes them).

    ``resume`` (a :class:`~.checkpoint.RepeatState`): replay to its iteration without the
    diagnostics (its rows are the checkpoint's), check the model there, and go on.
    ``checkpoint(repeat, state, ledger_info)`` is called every ``run.checkpoint_every``
    iterations and at the end."""
    from .checkpoint import RepeatState, digest

    ledger, history = _ledger(config), []
    labels = _label_ledger(config, type(solver))
    budget = config.privacy.budget_epsilon
    deployed = deployment(config)
    rows = []
    # what was exchanged while the solver was built (a setup round) is iteration 0's
    setup = solver.wire.take()
    sent = {"messages": setup.messages, "bytes": setup.bytes}
    traffic = [_traffic_rows(setup, repeat, 0)]

    def record(stats: dict, elapsed: float, metrics: dict, last: bool = False):
        obj = metrics.get("objective")
        row = {"epoch": solver.iteration}
        if obj is not None:
            row["objective"] = obj
            row["suboptimality"] = (obj - f_star) / abs(f_star) if np.isfinite(f_star) else np.nan
        if not deployed:
            row.update(_evaluate(solver, prepared))
        elif last:  # a deployment scores the test rows once, with the final model
            row.update(_score(solver, prepared))
        row.update({k: v for k, v in metrics.items() if k != "objective"})
        row["wall_time_s"] = elapsed
        row.update(stats)
        row.update(_privacy_row(solver, ledger, labels))
        row.update(sent)
        rows.append(row)
        if on_epoch is not None:
            on_epoch({**row, "repeat": repeat})

    def counts() -> list:
        return [[s.diagnostics.tolist(), s._last_scoring.tolist()] for s in _sessions(solver)]

    def restore(saved) -> None:
        for s, (d, last) in zip(_sessions(solver), saved):
            s.diagnostics[:] = np.asarray(d, dtype=np.int64).reshape(s.diagnostics.shape)
            s._last_scoring = np.asarray(last, dtype=np.int64).reshape(s.diagnostics.shape)

    def model_digest() -> str:  # (asking for the model is no diagnostic of the run)
        saved = counts()
        value = digest(solver.coef())
        restore(saved)
        return value

    def arrived():  # the replay reached the checkpoint: its model must be the recorded one
        nonlocal rows, elapsed, replaying
        restore(resume.diagnostics)  # the unbroken run's counts there
        # (a deployment's parties send no model: its epsilon and bytes there must agree)
        if (
            (not deployed and model_digest() != resume.digest)
            or int(sent["bytes"]) != int(resume.rows[-1].get("bytes", sent["bytes"]))
            or (
                resume.rows[-1].get("epoch") == resume.epoch
                and not _same_epsilon(_privacy_row(solver, ledger, labels), resume.rows[-1])
            )
        ):
            raise ConfigError(
                f"--resume: the replay of repeat {repeat + 1} reached iteration "
                f"{resume.epoch} with another model than the checkpoint's (the "
                "data, the code or the environment changed): start a new run"
            )
        rows, elapsed, replaying = [dict(r) for r in resume.rows], resume.elapsed, False

    def save(done: bool):
        if checkpoint is not None:
            spent = {"events": sum(len(h) for h in history)}
            if ledger is not None:
                spent["epsilon"] = float(repeats.epsilon(ledger))
            checkpoint(
                repeat,
                RepeatState(
                    epoch=int(solver.iteration),
                    rows=list(rows),
                    elapsed=float(elapsed),
                    # (a deployment is never resumed, and its parties answer no request for the model)
                    digest="" if deployed else model_digest(),
                    done=done,
                    diagnostics=counts(),
                ),
                spent,
            )

    replaying, elapsed = resume is not None, 0.0
    # row 0: the common starting point, nothing spent, no time charged
    if not replaying:
        record(
            {c: 0.0 for c in type(solver).columns if c.endswith("_time_s")},
            0.0,
            solver.released_metrics() if deployed else solver.initial_metrics(),
        )
    start = (resume.rows if replaying else rows)[0].get("objective")
    # a finite objective a million times its starting value has diverged too (SGD with a huge
    # learning rate reaches 1e10 without ever overflowing)
    limit = None if start is None or not np.isfinite(start) else 1e6 * max(1.0, abs(start))
    stopped = None
    every, T = config.run.eval_every, config.solver.epochs
    K = config.run.checkpoint_every
    if replaying and resume.epoch == 0:
        arrived()

    def evaluate_and_record(stats, last: bool = False):
        metrics = solver.released_metrics() if deployed else solver.evaluate()
        obj = metrics.get("objective")
        if obj is not None and (not np.isfinite(obj) or (limit is not None and obj > limit)):
            raise _divergence(config, solver, obj)
        record(stats, elapsed, metrics, last)

    stats = {}
    # Overflow in a diverging run is reported once, below, not as warnings.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for i in range(T):
            if stop_at_budget and budget is not None:
                ahead = repeats.ahead(ledger, solver.planned_releases())
                if ahead > budget:  # the next iteration would publish beyond the budget
                    stopped = {
                        "after_epoch": solver.iteration,
                        "budget_epsilon": budget,
                        "epsilon_spent": repeats.epsilon(ledger),
                        "epsilon_next_epoch": ahead,
                        "accountant": ledger.method,
                        **({"repeat": repeat} if config.run.repeats > 1 else {}),
                    }
                    if rows[-1]["epoch"] != solver.iteration:
                        evaluate_and_record(stats, last=True)
                    elif deployed:
                        rows[-1].update(_score(solver, prepared))
                    break
            t0 = perf_counter()
            try:
                stats = solver.step()
            except NonFiniteError as exc:  # the transport refused a NaN or an infinity
                raise _divergence(config, solver, None, str(exc)) from None
            elapsed += perf_counter() - t0  # solver time only; evaluation is not charged
            step = solver.wire.take()
            sent = {"messages": sent["messages"] + step.messages, "bytes": sent["bytes"] + step.bytes}
            traffic.append(_traffic_rows(step, repeat, solver.iteration))
            if ledger is not None or labels is not None:
                released = solver.releases()
                for book in (ledger, labels):
                    if book is not None:
                        book.add(released)
                history.append(released)
            if replaying:  # the checkpoint holds these rows: no diagnostics until it
                if solver.iteration == resume.epoch:
                    arrived()
                continue
            # diagnostics every `eval_every` iterations and at the end: never in solver time
            if solver.iteration % every == 0 or i == T - 1:
                evaluate_and_record(stats, last=i == T - 1)
            if K and solver.iteration % K == 0 and i < T - 1:
                save(done=False)
    if replaying:  # (a budget stop came before the checkpoint's iteration: cannot be)
        raise ConfigError(
            f"--resume: repeat {repeat + 1} ended at iteration {solver.iteration}, "
            f"before its checkpoint's {resume.epoch}: start a new run"
        )
    save(done=True)
    repeats.finish(ledger, history)
    return rows, stopped, elapsed, traffic


def _columns(rows: list[dict], solver_cls) -> list[str]:
    present = set().union(*rows)
    base = [c for c in BASE_COLUMNS if c in present]
    declared = [c for c in solver_cls.columns if c in present and c not in base and not c.endswith("_time_s")]
    timing = ["wall_time_s"] + [c for c in solver_cls.columns if c.endswith("_time_s")]
    privacy = [c for c in PRIVACY_COLUMNS if c in present]
    used = set(base + declared + timing + privacy + COMMUNICATION_COLUMNS)
    rest = [c for c in rows[0] if c not in used] + sorted({c for r in rows for c in r} - used - set(rows[0]))
    return base + declared + timing + privacy + rest + COMMUNICATION_COLUMNS


def _aggregate(frames: list[pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean per iteration over repeats, and the per-repeat rows in one frame."""
    allr = pd.concat([f.assign(repeat=r) for r, f in enumerate(frames)], ignore_index=True)
    numeric = [c for c in frames[0].columns if c != "epoch"]
    mean = allr.groupby("epoch", sort=True)[numeric].mean().reset_index()
    return mean[frames[0].columns], allr[["repeat", *frames[0].columns]]


def run_experiment(
    config: Config,
    *,
    data_dir=None,
    on_epoch: Callable[[dict], None] | None = None,
    use_cache: bool = True,
    with_baselines: bool = True,
    stop_at_budget: bool = False,
    plan: RunPlan | None = None,
    release_only: bool = False,
    resume=None,
    checkpoint: Callable | None = None,
) -> RunResult:
    """Run ``config`` end to end and return its records (nothing is written).

    With ``stop_at_budget`` and ``privacy.budget_epsilon`` set, each repeat
    ends before the first iteration that would spend more than the budget.
    ``with_baselines=False`` skips the baselines and the central optimum
    (``suboptimality`` is then NaN); the regression checks use it.
    ``release_only`` (a run that claims a guarantee) keeps only the released
    values: the diagnostic columns, the references (all computed from the
    exact private data) and the diagnostic result numbers are left out.
    ``resume`` (a :class:`~.checkpoint.Checkpoint`) replays the run to it and goes on;
    ``checkpoint(repeat, state, released)`` receives each repeat's state every
    ``run.checkpoint_every`` iterations (:mod:`.checkpoint`).
    """
    if release_only and not config.privacy.claims_guarantee:
        raise ConfigError(
            f"--release-only applies to a run that claims a privacy guarantee ({config.solver.name}: set privacy.delta)"
        )
    if release_only or deployment(config):
        with_baselines = False  # the references need every party's exact data
    started = datetime.now(UTC)
    plan = plan or plan_run(config, data_dir, use_cache=not release_only)
    cls, setting = plan.solver_cls, plan.setting
    if stop_at_budget:
        if config.privacy.budget_epsilon is None:
            raise ConfigError("--stop-at-budget needs privacy.budget_epsilon in the config")
        if plan.solver.planned_releases() is None:
            raise ConfigError(
                f"--stop-at-budget: {cls.name} cannot say in advance what its next iteration releases with this config"
            )

    frames, baselines_all, stops, seconds, traffic = [], [], [], [], []
    repeats = Repeats(config, setting.same_units_every_repeat)
    baselines, baseline_seconds = {}, 0.0
    for r in range(config.run.repeats):
        if r == 0:
            prepared, solver = plan.first, plan.solver
        else:
            prepared = _prepare(setting, config, r)
            solver = _build(cls, config, prepared, _streams(config, r), plan.backend)
        if with_baselines and (r == 0 or not setting.repeats_share_baselines):
            tb = perf_counter()
            baselines = setting.baselines(prepared, use_cache=use_cache, which=config.run.baselines)
            baseline_seconds += perf_counter() - tb
        baselines_all.append(baselines)
        f_star = baselines.get("central", {}).get("objective", float("nan")) if baselines else np.nan
        rows, stopped, elapsed, sent = _run_one(
            config,
            solver,
            prepared,
            f_star,
            repeat=r,
            on_epoch=on_epoch,
            stop_at_budget=stop_at_budget,
            repeats=repeats,
            resume=None if resume is None else resume.at(r),
            checkpoint=checkpoint,
        )
        traffic += sent
        inference = _inference(solver, prepared)
        if inference is not None:
            traffic.append(_traffic_rows(inference, r, solver.iteration, phase=1))
        traffic += _diagnostic_rows(solver, r)
        frames.append(pd.DataFrame(rows, columns=_columns(rows, cls)))
        stops.append(stopped)
        seconds.append(elapsed)

    traffic += _alignment_traffic(plan.dataset_info)
    frames = repeats.recompose(frames)  # a deployment's epsilon: all its repeats composed
    if len(frames) == 1:
        metrics, per_repeat = frames[0], None
    else:
        metrics, per_repeat = _aggregate(frames)
    finished = datetime.now(UTC)
    manifest = _manifest(config, plan, solver, prepared, baselines, metrics, seconds, stops, repeats, inference)
    manifest["diagnostic"].update(
        {
            "started_at": started.isoformat(timespec="seconds"),
            "finished_at": finished.isoformat(timespec="seconds"),
            "timing": {
                "baselines_seconds": baseline_seconds,
                "baselines": config.run.baselines if with_baselines else "none",
            },
        }
    )
    if len(baselines_all) > 1 and not setting.repeats_share_baselines:
        baselines = {"per_repeat": baselines_all}
    if config.privacy.claims_guarantee:
        baselines = labelled_diagnostic(baselines)
    if release_only:
        kinds = manifest["released"]["columns"]
        keep = [c for c in metrics.columns if kinds.get(c) == RELEASED]
        metrics = metrics[keep]
        per_repeat = None if per_repeat is None else per_repeat[["repeat", *keep]]
        drop_diagnostic(manifest)  # the diagnostic section, result and privacy.spent fields
        manifest["released"]["release_only"] = True
        # what is left is released: a figure of released metrics, a note for the references
        manifest["released"]["files"].update({"baselines.json": RELEASED, "loss.png": RELEASED, "loss.pdf": RELEASED})
        baselines = {
            "note": "release-only run: the references use the exact private data (diagnostic) and are not written"
        }
    if deployment(config):
        manifest["deployment"] = {
            "parties": "each party its own service (vfl party serve): its data, its noise "
            "(exact, from its own OS entropy), its limits and its own record",
            "recorded": "the released values' functions the coordinator computes (the "
            "primal residual, the loss and accuracy of the released shares' sum), "
            "and one scoring of the test rows with the final model",
            "unavailable": list(UNAVAILABLE_IN_DEPLOYMENT),
        }
    communication = pd.DataFrame(np.concatenate(traffic), columns=COMMUNICATION_FILE_COLUMNS)
    communication["phase"] = np.asarray(PHASES, dtype=object)[communication["phase"].to_numpy()]
    return RunResult(
        config=config,
        manifest=Manifest.model_validate(manifest),
        metrics=metrics,
        baselines=baselines,
        coef=None if deployment(config) else solver.coef(),
        repeats=per_repeat,
        communication=communication,
        ledger=repeats.ledger(),
    )


def _inference(solver: Solver, prepared):
    """What scoring the test rows once with the final model sends (the solver's declaration),
    or None when the solver declares nothing."""
    declared = type(solver).inference
    if declared is None:
        return None
    return declared.traffic(solver.wire.units, len(prepared.y_test), solver.wire.dtype)


def _manifest(config, plan, solver, prepared, baselines, metrics, seconds, stops, repeats, inference=None) -> dict:
    cls = plan.solver_cls
    final = metrics.iloc[-1]
    objective = prepared.objective
    epochs_run = int(final["epoch"])
    streams = _streams(config, 0)
    info = solver.privacy_info()
    privacy = None
    if config.privacy.claims_guarantee or info is not None:
        privacy = {} if info is None else info.dump()
        if info is not None and info.neighbouring:  # on the cleaned file when records were removed
            privacy["neighbouring"] = stated_on(info.neighbouring, plan.cleaning)
        privacy["noise"] = streams.describe()["noise"]
        if config.tuning is not None:  # how the hyper-parameters were chosen
            privacy["hyperparameter_tuning"] = {
                "method": config.tuning.method,
                **config.tuning.values,
                "charged": "the tuning's RDP (Papernot and Steinke 2022, Thm. "
                "2) composed before the run's releases: every "
                "epsilon of this run includes it"
                if config.tuning.private
                else "nothing: chosen on rows declared public",
            }
        if "label_guarantee" in privacy and "epsilon_labels" in final.index:
            privacy["label_guarantee"] = {
                **privacy["label_guarantee"],
                "spent": {
                    "epsilon": _num(final["epsilon_labels"]),
                    "delta": _num(final["delta_labels"]),
                    "epochs": epochs_run,
                },
            }
        ledger, how = repeats.ledger(), repeats.describe()
        if ledger is not None:
            privacy["spent"] = {
                "epochs": epochs_run,
                "epsilon_tight": _num(final.get("epsilon_tight")),
                "delta_tight": ledger.delta,
                "tight_accountant": ledger.method,
                "paper_claim": type(solver).paper_claim,  # None: no published analysis
                "epsilon_paper": _num(final.get("epsilon_paper")),
                "delta_paper": _num(final.get("delta_paper")),
                "other_claims": {
                    name: {"epsilon": eps, "delta": delta} for name, (eps, delta) in solver.other_claims().items()
                },
                **({"repeats": how} if how else {}),  # composed, or replications
            }
            if config.privacy.budget_epsilon is not None:
                over = np.flatnonzero(metrics["epsilon_tight"].to_numpy() > config.privacy.budget_epsilon)
                privacy["budget"] = {
                    "epsilon": config.privacy.budget_epsilon,
                    "accountant": ledger.method,
                    "stopped": next((s for s in stops if s), None),
                    "first_epoch_over_budget": int(metrics["epoch"].iloc[over[0]]) if over.size else None,
                }
    result = {
        "final_test_logloss": final["test_logloss"],
        "final_test_accuracy": final["test_accuracy"],
        "solver_seconds": float(np.mean(seconds)),
        "epochs_run": epochs_run,
        "seconds_per_epoch": float(np.mean(seconds)) / max(1, epochs_run),
    }
    if "objective" in metrics:
        f_star = baselines.get("central", {}).get("objective") if baselines else None
        result.update(
            {
                "final_objective": final["objective"],
                "central_objective": f_star,
                "relative_gap": final.get("suboptimality"),
            }
        )
    result["messages"] = int(final["messages"])
    result["bytes"] = int(final["bytes"])
    if inference is not None:  # one scoring of the test rows, apart from training
        result["inference_messages"] = inference.messages
        result["inference_bytes"] = inference.bytes
    private = bool(config.privacy.claims_guarantee)
    # metrics scored on test rows the relation protects are diagnostic (Prepared.test_private)
    kinds = column_kinds(cls, list(metrics.columns), private, test_rows_private=bool(prepared.test_private))
    result_kinds = {
        k: (
            RELEASED
            if not private
            or k in ("epochs_run", "messages", "bytes", "inference_messages", "inference_bytes")
            or (k.startswith("final_test") and kinds.get(k[len("final_") :]) == RELEASED)
            else DIAGNOSTIC
        )
        for k in result
    }
    dataset = dict(plan.dataset_info or _dataset_info(plan.dataset, plan.fallback_note, plan.setting))
    described = solver.describe()
    exact = {
        "dataset": dataset.pop("diagnostic"),
        "solver": {k: described.pop(k) for k in cls.diagnostic_keys if k in described},
    }
    if private:
        dataset["sizes"] = (
            "N (n_train) and n_test are fixed by the relation (a neighbouring "
            "dataset has as many records), so public, as are the message "
            "counts and bytes that follow from them"
        )
    transport = _transport(plan.backend, metrics, seconds, config.run.repeats, inference)
    released = {
        "private": private,
        "meaning": {
            RELEASED: "a function of what the mechanism releases plus data it does not "
            "protect: covered by the guarantee",
            DIAGNOSTIC: "computed from exact private values (or timed), for research: not covered",
        },
        "columns": kinds,
        "result": result_kinds,
        # manifest.json: a field has the kind of its longest prefix listed here, else released
        "fields": {
            "diagnostic": DIAGNOSTIC if private else RELEASED,
            **{f"result.{k}": v for k, v in result_kinds.items()},
            # privacy.spent repeats the final row of the epsilon columns
            **{
                f"privacy.spent.{c}": DIAGNOSTIC
                for c in PRIVACY_COLUMNS
                if kinds.get(c) == DIAGNOSTIC and "spent" in (privacy or {})
            },
            **{
                f"privacy.spent.other_claims.{name}": DIAGNOSTIC
                for name in ((privacy or {})["spent"]["other_claims"] if "spent" in (privacy or {}) else ())
                if kinds.get(f"epsilon_{name}") == DIAGNOSTIC
            },
            **({"communication.transport": DIAGNOSTIC if private else RELEASED} if transport else {}),
        },
        "files": {
            "config.json": RELEASED,
            "manifest.json": "per field (see fields)",
            "metrics.csv": "per column (see columns)",
            **(
                {
                    "metrics_repeats.csv": "per column (see columns; repeat released)",
                    "metrics_stats.csv": "per column (<column>_mean, _std, _min, _max: the "
                    "column's kind; n_repeats released)",
                }
                if config.run.repeats > 1
                else {}
            ),
            "communication.csv": RELEASED,
            "baselines.json": DIAGNOSTIC if private else RELEASED,
            **{f"loss.{ext}": DIAGNOSTIC if private else RELEASED for ext in ("png", "pdf")},
        },
        "test_metrics_note": _test_note(cls, prepared, private),
        "release_only": False,
    }
    return {
        "name": config.name,
        **environment_info(),
        "seed": config.run.seed,
        "repeats": config.run.repeats,
        "dataset": dataset,
        "preprocessing": {
            "steps": prepared.preprocessing,
            "private": bool(config.privacy.claims_guarantee),
            "fitted_on_training_rows": _training_fitted(prepared.preprocessing),
        },
        "setting": cls.setting.value,
        "distribution": prepared.distribution,
        "partition": prepared.distribution.get("parties"),
        "objective": {
            "loss": objective.loss,
            "reduction": objective.reduction,
            "regularizer": objective.regularizer,
            "lam": objective.lam,
            "formula": objective.describe(),
            **({"intercept": plan.setting.partition.intercept} if plan.setting.partition is not None else {}),
        },
        "solver": {
            "name": cls.name,
            "title": cls.title,
            "setting": cls.setting.value,
            "iteration_name": cls.iteration_name,
            "reference": {
                "paper": cls.reference.paper,
                "algorithm": cls.reference.algorithm,
                "equations": cls.reference.equations,
                "note": cls.reference.note,
            },
            **config.solver.params(),
            **described,
        },
        **({"privacy": privacy} if privacy else {}),
        "communication": {
            **solver.wire.describe(),
            "units": solver.wire.units,
            "per_unit": "communication.csv (unit 0 is the hub: the coordinator, "
            "trainer or active party; absent in a network; phase "
            "training or inference)",
            **_inference_manifest(cls, inference, prepared),
            **_alignment_manifest(plan.dataset_info),
            **transport,
        },
        **({"backend": plan.backend.describe()} if plan.backend is not None else {}),
        "released": released,
        "result": result,
        # exact values that depend on the data (or on time): diagnostic in a private run; the
        # runner adds the timestamps and timings; a release-only run writes none of it
        "diagnostic": exact,
    }


def _test_note(cls, prepared, private: bool) -> str:
    """Why a private run's test metrics are diagnostic ("" when they are released)."""
    if not private:
        return ""
    own = column_kinds(cls, ["test_logloss"], True)["test_logloss"] == DIAGNOSTIC
    return "; and ".join(n for n in (cls.diagnostic_note if own else "", prepared.test_private) if n)


def _inference_manifest(cls, inference, prepared) -> dict:
    """The manifest's ``communication.inference``: one scoring of the test rows."""
    if cls.inference is None:
        return {"inference": {"declared": False}}
    return {
        "inference": {
            "test_rows": int(len(prepared.y_test)),
            "messages": inference.messages,
            "bytes": inference.bytes,
            "values_per_row": cls.inference.values_per_row,
            "what": cls.inference.note,
            "counted": "once per repeat: the whole test set scored with the final "
            "model; not in metrics.csv's messages and bytes (training)",
        }
    }


def _alignment_manifest(info: dict | None) -> dict:
    """The manifest's ``communication.alignment``: what aligning the party files sent."""
    aligned = DatasetRecord.alignment_in(info)
    if not aligned:
        return {}
    return {
        "alignment": {
            "messages": sum(a["messages"] for a in aligned.values()),
            "bytes": sum(a["bytes"] for a in aligned.values()),
            "protocol": next(iter(aligned.values()))["protocol"],
            "intersection": {part: a["intersection"] for part, a in aligned.items()},
            "counted": "once, before training (communication.csv phase "
            "alignment); not in metrics.csv's messages and bytes",
        }
    }


def _transport(backend, metrics, seconds, repeats: int, inference=None) -> dict:
    """What the transport itself carried (a backend that has one), beside the protocol's count;
    for inference, what the last scoring of the test rows carried."""
    if backend is None:
        return {}
    scored = (
        {}
        if inference is None or backend.inference_transport is None
        else {"inference_bytes": backend.inference_transport, "protocol_inference_bytes": inference.bytes}
    )
    epochs = int(metrics["epoch"].iloc[-1]) * repeats
    protocol = int(metrics["bytes"].iloc[-1]) * repeats
    return {
        "transport": {
            "bytes": backend.transport,
            "protocol_bytes": protocol,
            "bytes_per_epoch": backend.transport / max(epochs, 1),
            "protocol_bytes_per_epoch": protocol / max(epochs, 1),
            "ratio": backend.transport / protocol if protocol else None,
            **scored,
            # every phase: what TCP carried, and the codec's payload and framing
            "phases": backend.phases(),
            "source": backend.describe()["transport_source"],
        }
    }


def _training_fitted(steps: list) -> bool:
    """Whether any parameter of the stage was read off the training rows (non-private runs)."""
    sources = [str(s.get("source", "")) for s in steps]
    sources += [c.get("source", "") for s in steps for c in s.get("categorical", {}).values()]
    return any("training_rows" in src for src in sources)


def _num(v):
    if v is None:
        return None
    v = float(v)
    return None if np.isnan(v) else v
