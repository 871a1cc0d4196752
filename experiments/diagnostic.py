"""What a run writes that depends on the exact private data, and how it is kept apart.

The manifest's ``diagnostic`` section holds every exact, data-dependent value
that is not a metric (the timestamps and timings, the private files' sha256
and sizes, the loader's data-dependent counts, a solver's
``diagnostic_keys``); ``released.fields``, ``.columns``, ``.result`` and
``.files`` give the kind of everything else (read by
:mod:`vfl.experiments.released`). This module splits the dataset's record,
labels a private run's references, and strips a release-only manifest.
"""

from __future__ import annotations

from vfl.core.column_kinds import DIAGNOSTIC
from vfl.datasets import REGISTRY
from vfl.datasets.dataset import RawDataset

__all__ = ["drop_diagnostic", "exact_data", "labelled_diagnostic"]


#: what a user file's provenance record says about its bytes (private for the training file)
_FILE_BYTES = ("sha256", "size", "content_sha256", "content_size")


def exact_data(dataset: RawDataset, provenance: dict) -> tuple[dict, dict]:
    """(the sha256 that do not depend on private records, the values that do), taking the
    latter out of ``provenance``.

    A registry dataset read with verification records the registry's published sha256 (a
    constant: what the run checked against), and the sha256 of the files as read go to the
    diagnostic values (a private run that does not stop on a mismatch reads a changed file).
    A separate test file is not protected: its sha256 stays. The training file of the user's
    own data (``provenance["files"]["train"]``) and any file not verified are private: their
    hashes and sizes go, with the loader's ``provenance["diagnostic"]`` counts and the
    training records dropped (``rows_dropped.train``)."""
    exact: dict = {}
    counts = provenance.pop("diagnostic", None)
    if counts:
        exact["provenance"] = counts
    dropped = provenance.get("rows_dropped")
    if isinstance(dropped, dict) and "train" in dropped:
        exact.setdefault("provenance", {})["rows_dropped"] = {"train": dropped.pop("train")}
    if provenance.get("source") == "party files":  # the loader withheld the private bytes
        return dict(dataset.checksums), exact
    files = provenance.get("files")
    train = files.get("train") if isinstance(files, dict) else None
    if isinstance(train, dict):  # the user's own training file
        exact["files"] = {"train": {k: train.pop(k) for k in _FILE_BYTES if k in train}}
        private = {train.get("path")}
    elif dataset.name in REGISTRY and provenance.get("verified"):
        published = {f.name: f.sha256 for f in REGISTRY[dataset.name].files}
        exact["sha256"] = dict(dataset.checksums)
        return {k: published[k] for k in dataset.checksums}, exact
    else:
        private = set(dataset.checksums)
    public = {k: v for k, v in dataset.checksums.items() if k not in private}
    withheld = {k: v for k, v in dataset.checksums.items() if k in private}
    if withheld:
        exact["sha256"] = withheld
    return public, exact


def drop_diagnostic(manifest: dict) -> None:
    """Remove from ``manifest`` every field its ``released.fields`` marks diagnostic (a
    release-only run): the ``diagnostic`` section, ``result`` and ``privacy.spent`` fields."""
    for field, kind in manifest["released"]["fields"].items():
        if kind != DIAGNOSTIC:
            continue
        *parents, last = field.split(".")
        obj = manifest
        for key in parents:
            obj = obj.get(key) if isinstance(obj, dict) else None
        if isinstance(obj, dict):
            obj.pop(last, None)


def labelled_diagnostic(baselines: dict) -> dict:
    """A private run's references, each label saying it is diagnostic: they are fitted on
    the private training rows (figures and summaries show the label)."""

    def mark(found: dict) -> dict:
        return {
            k: {**v, "label": f"{v['label']} (diagnostic)"}
            if isinstance(v, dict) and isinstance(v.get("label"), str) and not v["label"].endswith("(diagnostic)")
            else v
            for k, v in found.items()
        }

    if "per_repeat" in baselines:
        return {**baselines, "per_repeat": [mark(b) for b in baselines["per_repeat"]]}
    return mark(baselines)
