"""The run record: what ``manifest.json`` holds, as typed, frozen models.

The runner builds the manifest and validates it here before anything is
written (:func:`vfl.experiments.records.write_run`); a run directory read
back (:func:`~vfl.experiments.records.load_run`) is validated the same way,
so every reader above (summaries, plots, papers, the CLI) reads attributes,
not keys. ``docs/schemas/manifest.schema.json`` is generated from
:class:`Manifest` (``python -m vfl.experiments.manifest``) and a test checks
that it has not drifted.

Sections whose content another layer declares stay open maps: the dataset's
provenance (the loader's), the distribution (the setting's), the
preprocessing steps (the stage's) and, in ``solver``, the validated
``[solver]`` values and :meth:`~vfl.core.solver.Solver.describe` keys of the
solver that ran (each solver declares its own).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from vfl.core.typed_records import LabelGuarantee, Num, PrivacyInfo, Record

__all__ = [
    "Manifest",
    "PrivacyRecord",
    "Spent",
    "Budget",
    "Released",
    "Result",
    "Communication",
    "SolverRecord",
    "DatasetRecord",
    "schema",
    "SCHEMA_PATH",
]

#: where the generated schema is committed (from the repository's root)
SCHEMA_PATH = Path("docs/schemas/manifest.schema.json")

Kind = Literal["released", "diagnostic"]


class ClaimSpent(Record):
    """A further claimed (epsilon, delta): a paper's analysis, never a guarantee."""

    epsilon: float | None = None
    delta: float | None = None


class RepeatsSpent(Record):
    """How the repeats' releases are charged (:meth:`vfl.experiments.repeats.Repeats.describe`)."""

    count: int = Field(description="run.repeats")
    composed: bool = Field(
        description="one ledger over every repeat (a deployment), or independent replications of a simulation"
    )
    per_repeat_epsilon_tight: list[float] | None = None
    units: str | None = None
    meaning: str


class Spent(Record):
    """What the run spent: the last row of the epsilon columns."""

    epochs: int = Field(description="T, the iterations composed")
    epsilon_tight: float | None = Field(None, description="the sound epsilon, composed from the enforced sensitivities")
    delta_tight: Num = Field(description="its delta")
    tight_accountant: str = Field(description="the accountant that composed it")
    paper_claim: str | None = Field(description="the paper's analysis in words; None: none")
    epsilon_paper: float | None = Field(None, description="the paper's own epsilon (a claim)")
    delta_paper: float | None = None
    other_claims: dict[str, ClaimSpent] = Field(description="epsilon_<name>: further claims")
    repeats: RepeatsSpent | None = None


class Stopped(Record):
    """Where ``--stop-at-budget`` stopped the run."""

    after_epoch: int = Field(description="the last iteration run")
    budget_epsilon: Num = Field(description="privacy.budget_epsilon")
    epsilon_spent: float = Field(description="epsilon after it")
    epsilon_next_epoch: float = Field(description="what one more iteration would have spent")
    accountant: str
    repeat: int | None = Field(None, description="the repeat it stopped in (with repeats)")


class Budget(Record):
    """``privacy.budget_epsilon`` and whether the run crossed it."""

    epsilon: Num
    accountant: str
    stopped: Stopped | None
    first_epoch_over_budget: int | None


class PrivacyRecord(PrivacyInfo):
    """The manifest's ``privacy``: the solver's :class:`~vfl.core.typed_records.PrivacyInfo` and
    what the runner adds (where the noise came from, the tuning, what was spent)."""

    hyperparameter_tuning: dict[str, Any] | None = Field(
        None, description="how the hyper-parameters were chosen, and what that was charged"
    )
    spent: Spent | None = None
    budget: Budget | None = None


class Git(Record):
    commit: str
    dirty: bool
    found_from: str
    work_tree: str | None = None


class DatasetRecord(Record):
    """The records the run used: name, sizes, checksums of the public files."""

    name: str
    description: str
    stand_in: bool = Field(description="a synthetic stand-in for a missing dataset")
    fallback: str | None = None
    n_train: int = Field(description="N, the training rows")
    n_test: int
    n_features: int = Field(description="d, the columns after preprocessing")
    sha256: dict[str, Any]
    provenance: dict[str, Any] = Field(description="the loader's account of the files")
    sizes: str | None = Field(None, description="why N and n_test are public (a private run)")

    @staticmethod
    def alignment_in(section: dict | None) -> dict:
        """The party files' alignment (PSI and agreement, per part) that a ``dataset`` section
        being built records in its provenance; empty when the rows were not aligned."""
        provenance = (section or {}).get("provenance") or {}
        return provenance.get("alignment") or {}

    @property
    def train_file(self) -> str | None:
        """The training file the user gave (the loader's ``provenance.files.train.given``)."""
        files = self.provenance.get("files")
        train = files.get("train") if isinstance(files, dict) else None
        return train.get("given") if isinstance(train, dict) else None


class Preprocessing(Record):
    steps: list[dict[str, Any]]
    private: bool
    fitted_on_training_rows: bool


class Objective(Record):
    """``sum_i loss(y_i, u_i) + lam R(x)`` (its ``formula``)."""

    loss: str
    reduction: str
    regularizer: str
    lam: Num = Field(description="lam, the regularization weight")
    formula: str
    intercept: bool | None = None


class Reference(Record):
    paper: str
    algorithm: str
    equations: str
    note: str


class SolverRecord(Record):
    """The solver that ran. Besides these fields: its validated ``[solver]`` values and its
    :meth:`~vfl.core.solver.Solver.describe` keys, which each solver declares."""

    model_config = ConfigDict(frozen=True, extra="allow")

    name: str
    title: str
    setting: Literal["vertical", "horizontal", "network"]
    iteration_name: str = Field(description="what one iteration is called (epoch, iteration)")
    reference: Reference
    epochs: int = Field(description="T, solver.epochs")
    warnings: list[str] = Field([], description="printed in the run's summary")

    def value(self, key: str, default=None):
        """A ``[solver]`` value or ``describe()`` key of this solver."""
        return (self.model_extra or {}).get(key, default)


class Inference(Record):
    """One scoring of the test rows with the final model (``Solver.inference``)."""

    declared: bool | None = None
    test_rows: int | None = None
    messages: int | None = None
    bytes: int | None = None
    values_per_row: Num | None = None
    what: str | None = None
    counted: str | None = None


class Alignment(Record):
    """What aligning the party files (the PSI and the agreement) sent, once."""

    messages: int
    bytes: int
    protocol: str
    intersection: dict[str, int]
    counted: str


class Transport(Record):
    """What TCP itself carried on a backend with a transport, beside the protocol's count."""

    bytes: int
    protocol_bytes: int
    bytes_per_epoch: float
    protocol_bytes_per_epoch: float
    ratio: float | None
    inference_bytes: int | None = None
    protocol_inference_bytes: int | None = None
    phases: dict[str, Any]
    source: str


class Communication(Record):
    """The protocol's messages and bytes (:meth:`vfl.core.wire.Wire.describe`)."""

    format: str | None = None
    counted: str | None = None
    units: int = Field(0, description="the units the hub talks to")
    per_unit: str | None = None
    inference: Inference | None = None
    alignment: Alignment | None = None
    transport: Transport | None = None


class Backend(Record):
    """Where the units ran (``run.backend``): the backend's own account."""

    backend: str
    scheduler: str | None = None
    local_cluster: bool | None = None
    channel: str | None = None
    parties: dict[str, str] | None = None
    providers: dict[str, str] | None = None
    agents: dict[str, str] | None = None
    deployment: bool | None = None
    recoveries: list[dict[str, Any]] = []
    #: the party services' run id (their records and kept replies are keyed by it)
    run: str | None = None
    #: a resumed run: the releases each party's record held when it resumed
    resumed: dict[str, int] | None = None
    transport_source: str | None = None


class Released(Record):
    """Which values are released (covered by the guarantee) and which are diagnostic."""

    private: bool = Field(description="whether the run claims a guarantee")
    meaning: dict[str, str]
    columns: dict[str, Kind] = Field(description="metrics.csv's columns")
    result: dict[str, Kind]
    fields: dict[str, Kind] = Field(
        description="manifest.json: a field has the kind of its longest prefix listed, else released"
    )
    files: dict[str, str]
    test_metrics_note: str
    release_only: bool

    def column(self, name: str, default: str | None = None) -> str | None:
        """metrics.csv column ``name``'s kind as declared, else ``default``."""
        return self.columns.get(name, default)

    def file(self, name: str) -> str | None:
        """File ``name``'s kind as declared (``released.files``), or None."""
        return self.files.get(name)

    def field(self, path: str) -> str | None:
        """manifest.json field ``path``'s (dotted) kind as listed, or None."""
        return self.fields.get(path)

    def diagnostic(self, column: str) -> bool:
        """Whether ``column`` of a private run is diagnostic (a missing one is)."""
        return self.private and self.columns.get(column, "diagnostic") == "diagnostic"


class Result(Record):
    """The last row's numbers (a release-only run keeps the released ones)."""

    final_test_logloss: float | None = None
    final_test_accuracy: float | None = None
    solver_seconds: float | None = None
    epochs_run: int
    seconds_per_epoch: float | None = None
    final_objective: float | None = None
    central_objective: float | None = None
    relative_gap: float | None = None
    messages: int
    bytes: int
    inference_messages: int | None = None
    inference_bytes: int | None = None


class Timing(Record):
    baselines_seconds: float
    baselines: str


class Diagnostic(Record):
    """Exact values that depend on the data or on time: diagnostic in a private run."""

    dataset: dict[str, Any] = {}
    solver: dict[str, Any] = {}
    started_at: str | None = None
    finished_at: str | None = None
    timing: Timing | None = None
    resumed_from: str | None = None


class Deployment(Record):
    parties: str
    recorded: str
    unavailable: list[str]


class Manifest(Record):
    """``manifest.json``: everything needed to know what a run was and what it released."""

    name: str = Field(description="the config's name")
    vfl_version: str
    git: Git | None
    python: str
    platform: str
    libraries: dict[str, str]
    command: list[str]
    seed: int
    repeats: int
    dataset: DatasetRecord
    preprocessing: Preprocessing
    setting: Literal["vertical", "horizontal", "network"]
    distribution: dict[str, Any] = Field(description="how the rows were dealt to the units")
    partition: list[Any] | None = Field(description="the parties' column blocks (vertical)")
    objective: Objective
    solver: SolverRecord
    privacy: PrivacyRecord | None = None
    communication: Communication
    backend: Backend | None = None
    released: Released
    result: Result
    diagnostic: Diagnostic | None = None
    deployment: Deployment | None = None
    received: dict[str, Any] | None = Field(
        default=None,
        description="received.npz (vfl run --record-received): what each "
        "passive party received, for vfl attack RUN_DIR",
    )

    @property
    def iteration_name(self) -> str:
        return self.solver.iteration_name

    @property
    def spent(self) -> Spent | None:
        return None if self.privacy is None else self.privacy.spent

    @property
    def label_guarantee(self) -> LabelGuarantee | None:
        return None if self.privacy is None else self.privacy.label_guarantee


def schema() -> dict:
    """The JSON schema of ``manifest.json``, generated from :class:`Manifest`."""
    return Manifest.model_json_schema()


def schema_text() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # python -m vfl.experiments.manifest [OUT]: write the schema
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_PATH
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(schema_text())
    print(f"wrote {out}")
