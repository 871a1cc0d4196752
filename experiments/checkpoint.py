"""Checkpoints of a run in progress, and resuming from one (``vfl run --resume RUN_DIR``).

Every ``run.checkpoint_every`` iterations (and at each repeat's end) ``vfl run`` writes
``checkpoint.json`` into its run directory, atomically: the config, the options the run
was started with, per repeat the rows of metrics.csv so far and the solver seconds, where
the run is (repeat, iteration), a digest of the model there, and what the ledger says
was released by then.

Resuming replays the run to its checkpoint and continues. The replay is the run itself
without its diagnostics (they are most of a run's time, and their rows are in the
checkpoint): the solver steps again from the seed's streams, every message counted
again, and at the checkpoint the model's digest must be the recorded one, so the
resumed run finishes with the numbers of an unbroken run, bit for bit. This needs the
noise to be replayable, or the released values kept where they were drawn: a deployment
(``run.backend = "services"``, exact noise) resumes by the same replay, under the run's
own id (the checkpoint's ``services``), each party sending every release its record holds
for the run from that record (never drawn again, never charged again; a request that is
not there is refused) and drawing fresh noise only for the epochs after them. Its epsilon
is then the unbroken run's: the coordinator's ledger composes each release once. A party
restarted with other limits or another noise floor than the run started with is refused in
one line. Any other run with exact noise cannot resume: ``--resume`` refuses it, naming what
its ledger says was released (a new run starts after it; nothing is drawn twice).

The file is JSON of plain values (floats written exactly, by ``repr``); :class:`Checkpoint`
is its typed form, checked when read.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vfl.core.errors import ConfigError, PartyLostError

from .config import config_from_dict
from .transport.dask_cluster import check_cluster_option

__all__ = ["CHECKPOINT", "Checkpoint", "RepeatState", "digest", "read_checkpoint", "write_checkpoint"]

CHECKPOINT = "checkpoint.json"
VERSION = 1


@dataclass
class RepeatState:
    """One repeat as far as it went: its rows, solver seconds and the model's digest there."""

    epoch: int
    rows: list[dict]
    elapsed: float
    digest: str
    done: bool = False
    #: per session: the diagnostics' counts so far (communication.csv's diagnostics rows)
    diagnostics: list = field(default_factory=list)


@dataclass
class Checkpoint:
    config: dict
    #: the ``vfl run`` options that change what is written (stop_at_budget, release_only, ...)
    options: dict
    repeats: list[RepeatState] = field(default_factory=list)
    #: what the ledger says was released by the checkpoint (deployments: never drawn again)
    released: dict = field(default_factory=dict)
    #: how to resume, for the person who finds the directory
    resume: str = ""
    #: party services: the run's id on the parties' records and each party's facts
    services: dict = field(default_factory=dict)
    version: int = VERSION

    def at(self, repeat: int) -> RepeatState | None:
        return self.repeats[repeat] if repeat < len(self.repeats) else None

    def where(self) -> str:
        if not self.repeats:
            return "before its first iteration"
        r = len(self.repeats) - 1
        return f"repeat {r + 1}, iteration {self.repeats[r].epoch}"


def digest(coef) -> str:
    """The model at a checkpoint, to the bit (sha256 of its float64 bytes)."""
    if coef is None:
        return ""
    return hashlib.sha256(np.ascontiguousarray(coef, dtype=np.float64).tobytes()).hexdigest()


def _plain(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON: {type(value).__name__}")


def write_checkpoint(run_dir: Path, checkpoint: Checkpoint) -> Path:
    """Write ``checkpoint`` into ``run_dir`` atomically (beside, then renamed)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / CHECKPOINT
    tmp = run_dir / f".{CHECKPOINT}.partial"
    # (json.dumps: the C encoder; json.dump to a file encodes in Python, and asdict copied
    # every row first: together most of a run's time when it has many repeats)
    plain = {**vars(checkpoint), "repeats": [vars(r) for r in checkpoint.repeats]}
    text = json.dumps(plain, default=_plain)
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


def read_checkpoint(run_dir) -> Checkpoint:
    """The checkpoint of ``run_dir`` (ConfigError naming the problem otherwise)."""
    path = Path(run_dir) / CHECKPOINT
    if not Path(run_dir).is_dir():
        raise ConfigError(f"--resume {run_dir}: no such run directory")
    if not path.is_file():
        done = (Path(run_dir) / "metrics.csv").is_file()
        raise ConfigError(
            f"--resume {run_dir}: no {CHECKPOINT} there"
            + (
                " (the run finished: nothing to resume)"
                if done
                else " (the run wrote none: run.checkpoint_every = 0, or it stopped before its first checkpoint)"
            )
        )
    try:
        raw = json.loads(path.read_text())
        if raw.get("version") != VERSION:
            raise ValueError(f"version {raw.get('version')!r}, expected {VERSION}")
        raw["repeats"] = [RepeatState(**r) for r in raw["repeats"]]
        checkpoint = Checkpoint(**raw)
        if not isinstance(checkpoint.config, dict) or not isinstance(checkpoint.options, dict):
            raise ValueError("config and options must be tables")
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"--resume {run_dir}: {CHECKPOINT} is not a checkpoint this version writes ({exc})") from None
    return checkpoint


def refuse_deployment(run_dir, checkpoint: Checkpoint) -> None:
    """A deployment's exact noise is never drawn again: its run is not replayed."""
    spent = checkpoint.released
    what = f"its ledger records {spent.get('events', 0)} release(s) by {checkpoint.where()}" + (
        f" (epsilon {spent['epsilon']:.4g})" if spent.get("epsilon") is not None else ""
    )
    raise ConfigError(
        f"--resume {run_dir}: a deployment run (exact noise) is never replayed: "
        f"{what}, and drawing them again would release them twice; start a new "
        "run (its epsilon adds to these)"
    )


def finished(result, out: Path, resume: Checkpoint | None) -> bool:
    """A run done: a resumed one's manifest says from where; whether a checkpoint is there
    (the run directory replaces it)."""
    if resume is not None:  # (the replayed part's rows and timings are the checkpoint's)
        diag = result.manifest.diagnostic
        result.manifest = result.manifest.replace(
            diagnostic={**(diag.dump() if diag is not None else {}), "resumed_from": resume.where()}
        )
    return (Path(out) / CHECKPOINT).is_file()


def checkpoints(out: Path, config, resume: Checkpoint | None, options: dict, units=None):
    """``vfl run``'s writer: ``save(repeat, state, released)`` keeps ``out/checkpoint.json``
    current (None when ``run.checkpoint_every = 0``); ``units``: the party services, whose
    run id and facts it keeps."""
    if not config.run.checkpoint_every:
        return None
    how = f"vfl run --resume {out}" + (" --cluster ADDRESS (a scheduler)" if config.run.backend == "dask" else "")

    state = (
        copy.deepcopy(resume)
        if resume is not None
        else Checkpoint(
            config=json.loads(json.dumps(config.to_dict())), options={**options, "cwd": os.getcwd()}, resume=how
        )
    )
    state.resume = how

    def save(repeat: int, rs: RepeatState, released: dict) -> None:
        if hasattr(units, "record"):
            state.services = units.record()
        del state.repeats[repeat:]
        state.repeats.append(rs)
        state.released = released
        write_checkpoint(out, state)

    return save


def keep_or_drop(out: Path, exc: Exception, *, fresh: bool) -> str:
    """After a run stopped on ``exc``: a lost unit or scheduler keeps the checkpoint (what
    to add to the error: how to resume); any other error leaves nothing (``fresh``: the
    run made ``out``)."""

    path = Path(out) / CHECKPOINT
    if not path.is_file():
        return ""
    if isinstance(exc, PartyLostError):
        return f"; checkpoint in {out}: vfl run --resume {out}"
    if fresh:
        shutil.rmtree(out, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
    return ""


def resume_run(run_dir: Path, cluster, data_dir, quiet: bool, t0: float, backend, run, given: dict) -> None:
    """``vfl run --resume RUN_DIR``: the checkpoint's run, replayed to it and finished
    (``backend`` and ``run`` are the CLI's own ``vfl run`` steps; ``given``: the other
    options, refused when set)."""

    set_ = [
        ("--" + k.replace("_", "-")).replace("--config-path", "--config").replace("--overrides", "--set")
        for k, v in given.items()
        if v and k not in ("resume_dir", "cluster", "data_dir", "quiet")
    ]
    if set_:
        raise ConfigError(f"--resume takes the config and options from the checkpoint: leave out {', '.join(set_)}")
    run_dir = Path(run_dir).absolute()
    checkpoint = read_checkpoint(run_dir)
    config = config_from_dict(checkpoint.config)
    services = config.run.backend == "services"
    if not config.privacy.replayable_noise and not (services and checkpoint.services):
        refuse_deployment(run_dir, checkpoint)
    check_cluster_option(config, cluster)
    o = checkpoint.options
    # the config's relative paths (the user's files) are where the run was started
    with contextlib.chdir(o.get("cwd") or os.getcwd()):
        # party services: the run's own id on the parties' records, and their facts then
        with backend(config, cluster, data_dir, resume=checkpoint.services or None) as units:
            run(
                config,
                run_dir,
                data_dir,
                True,
                quiet,
                bool(o.get("no_cache")),
                bool(o.get("stop_at_budget")),
                bool(o.get("release_only")),
                units,
                t0,
                figure=bool(o.get("figure", True)),
                resume=checkpoint,
                record=bool(o.get("record_received")),
            )
