"""What ``vfl datasets list`` and ``vfl datasets verify`` show: every dataset with its shape
and whether its files are present, and each file's checksum verdict."""

from __future__ import annotations

from vfl.core.errors import DataError
from vfl.datasets import REGISTRY, SYNTHETIC_PRESETS, dataset_status, get_spec, verify_dataset
from vfl.datasets.synthetic import STAND_IN_FOR, preset_shape

__all__ = ["check_names", "dataset_rows", "verify_lines"]


def dataset_rows(base) -> list[tuple[str, str, str, str]]:
    """The table of ``vfl datasets list`` (its header first), for the data directory ``base``."""
    rows = [("name", "shape (train/test x features)", "status", "where")]
    for name, spec in sorted(REGISTRY.items()):
        files = dataset_status(name, base)
        missing = [f["name"] for f in files if not f["present"]]
        if not missing:
            status, where = "present", str(base)
        else:
            status = "missing" if len(missing) == len(files) else "partial"
            where = "missing " + ", ".join(missing)
        rows.append((name, f"{spec.n_train}/{spec.n_test} x {spec.n_features}", status, where))
    rows.append(("synthetic", "set by options", "generated", "-"))
    for preset in SYNTHETIC_PRESETS:
        n_train, n_test, width = preset_shape(preset)
        shape = f"{n_train}/{n_test} x {width}"
        real = STAND_IN_FOR.get(preset)
        note = f"stand-in, NOT the real {real} data" if real else f"{preset} synthetic rows, any n_train / n_test"
        rows.append((f"synthetic:{preset}", shape, "generated", note))
    for fmt in ("libsvm", "csv"):
        rows.append((fmt, "from the file", "your file", "[data] path = ...; see `vfl datasets inspect FILE`"))
    return rows


def check_names(names) -> None:
    """Refuse an unknown dataset name before anything is read."""
    for name in names:
        get_spec(name)


def verify_lines(names, base):
    """One line per file of ``names`` (default: every dataset) in ``base``, then a
    :class:`~vfl.core.errors.DataError` for a mismatch, or for a named dataset's missing file."""
    mismatched, missing, incomplete = [], [], []
    for name in names or sorted(REGISTRY):
        for row in verify_dataset(name, base):
            label = f"{name:<8} {row['name']:<21}"
            if not row["present"]:
                yield f"{label} missing"
                missing.append(row["name"])
                if name not in incomplete:
                    incomplete.append(name)
            elif row["ok"]:
                yield f"{label} ok        {row['path']}"
            else:
                actual = row["actual"] or row.get("error", "unreadable")
                yield f"{label} MISMATCH  {row['path']}: expected {row['expected']}, got {actual}"
                mismatched.append(row["name"])
    if mismatched:
        raise DataError(f"{len(mismatched)} file(s) failed verification: {', '.join(mismatched)}")
    if names and missing:
        raise DataError(
            f"{len(missing)} file(s) missing from {base}: {', '.join(missing)}; "
            "run " + " and ".join(f"`vfl datasets fetch {n}`" for n in incomplete)
        )
