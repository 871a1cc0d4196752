"""The run loop: a planned run (:func:`~vfl.experiments.run_plan.plan_run`) iterated
``run.repeats`` times, in memory, for any registered solver.

:func:`run_experiment` runs every repeat's solver, with its diagnostics, ledgers, budget stop
and checkpoints, and returns a :class:`~vfl.experiments.run_result.RunResult` (its manifest
assembled by :mod:`vfl.experiments.run_manifest`). Writing it to disk is
:mod:`vfl.experiments.records`' job, drawing it the presentation layer's. Nothing here knows
an algorithm by name: everything comes from the solver class's declarations
(:mod:`vfl.core.solver`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from time import perf_counter

import numpy as np
import pandas as pd

from vfl.core.column_kinds import RELEASED
from vfl.core.errors import ConfigError, DivergedError
from vfl.core.metrics import accuracy, log_loss
from vfl.core.protocol import NonFiniteError
from vfl.core.solver import Solver

from .checkpoint import RepeatState, digest
from .config import Config
from .diagnostic import drop_diagnostic, labelled_diagnostic
from .manifest import Manifest
from .received import Received
from .repeat_setup import _build, _label_ledger, _ledger, _prepare, _streams
from .repeats import Repeats
from .run_manifest import _manifest
from .run_plan import UNAVAILABLE_IN_DEPLOYMENT, RunPlan, deployment, plan_run
from .run_result import (
    COMMUNICATION_FILE_COLUMNS,
    PHASES,
    RunResult,
    _aggregate,
    _alignment_traffic,
    _columns,
    _diagnostic_rows,
    _sessions,
    _traffic_rows,
)

__all__ = ["check_run_options", "run_experiment"]


def check_run_options(
    config: Config, *, stop_at_budget: bool, release_only: bool, use_cache: bool, record_received: bool = False
) -> None:
    """`vfl run`'s flags against the config, before any work: one that would have no
    effect is refused, not silently ignored."""
    if record_received:
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


def _evaluate(solver: Solver, prepared) -> dict:
    u_train = solver.train_margins()
    u_test = solver.decision_function(prepared.test)
    return {
        "train_logloss": log_loss(u_train, prepared.y_train),
        "test_logloss": log_loss(u_test, prepared.y_test),
        "train_accuracy": accuracy(u_train, prepared.y_train),
        "test_accuracy": accuracy(u_test, prepared.y_test),
    }


def _score(solver: Solver, prepared) -> dict:
    """The test metrics of the current model: one scoring of the test rows (inference)."""
    u_test = solver.decision_function(prepared.test)
    return {"test_logloss": log_loss(u_test, prepared.y_test), "test_accuracy": accuracy(u_test, prepared.y_test)}


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
