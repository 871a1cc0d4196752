"""Every check a run needs, before any expensive work: :func:`plan_run` reads and distributes
the data and constructs the solver (every user error surfaces here) into a :class:`RunPlan`."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from vfl.core.errors import ConfigError
from vfl.core.relations import Cleaning
from vfl.core.solver import Solver
from vfl.datasets.dataset import RawDataset

from .config import Config
from .diagnostic import exact_data
from .party_sides import LabelHolderSetting, own_setting
from .registry import get_solver
from .repeat_setup import _build, _prepare, _streams
from .run_data import load_config_dataset
from .settings import prepare


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
