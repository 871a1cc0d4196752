"""The least manifest.json that validates (:class:`vfl.experiments.manifest.Manifest`), for
tests that make a run directory or a run record by hand."""

from __future__ import annotations

from vfl.experiments.manifest import Manifest

MANIFEST = {
    "name": "small",
    "vfl_version": "0",
    "git": None,
    "python": "3",
    "platform": "x",
    "libraries": {},
    "command": [],
    "seed": 0,
    "repeats": 1,
    "dataset": {
        "name": "synthetic",
        "description": "",
        "stand_in": False,
        "n_train": 30,
        "n_test": 30,
        "n_features": 6,
        "sha256": {},
        "provenance": {},
    },
    "preprocessing": {"steps": [], "private": False, "fitted_on_training_rows": False},
    "setting": "vertical",
    "distribution": {},
    "partition": None,
    "objective": {"loss": "logistic", "reduction": "sum", "regularizer": "l2sq", "lam": 0.001, "formula": ""},
    "solver": {
        "name": "admm_sharing",
        "title": "ADMM sharing",
        "setting": "vertical",
        "iteration_name": "epoch",
        "epochs": 2,
        "reference": {"paper": "", "algorithm": "", "equations": "", "note": ""},
    },
    "communication": {},
    "released": {
        "private": False,
        "meaning": {},
        "columns": {},
        "result": {},
        "fields": {},
        "files": {},
        "test_metrics_note": "",
        "release_only": False,
    },
    "result": {"epochs_run": 2, "messages": 0, "bytes": 0},
}


def manifest(**sections) -> Manifest:
    """:data:`MANIFEST` with ``sections`` merged into its sections (one level deep)."""
    value = {k: ({**MANIFEST[k], **v} if isinstance(MANIFEST.get(k), dict) else v) for k, v in sections.items()}
    return Manifest.model_validate({**MANIFEST, **value})
