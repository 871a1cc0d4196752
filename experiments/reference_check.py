"""``vfl references``: the committed reference curves found beside the package (or in the
working directory's clone), and each case checked against its band or regenerated."""

from __future__ import annotations

from pathlib import Path

from vfl.core.errors import ConfigError

from .reference import CASES, RegressionError, check_case, check_references, update_case

__all__ = ["reference_root", "reference_results"]


def reference_root(option_value, default: str, what: str) -> Path:
    """``--root`` of `vfl references`: given, or found beside the package."""
    if option_value is not None:
        return Path(option_value)
    # an editable install sits in the clone; a regular one finds the clone from the working directory
    for base in (Path(__file__).resolve().parents[1], Path.cwd()):
        if (base / default).is_dir():
            return base / default
    raise ConfigError(
        f"cannot find the {what} ({default}) next to the installed package or in the "
        f"current directory; run `vfl references` from a clone of the repository, "
        f"or pass --{what.split()[-1]} DIR"
    )


def reference_results(cases, update: bool, root, repo, data_dir):
    """One line per case (``ok``, ``FAIL`` or ``updated``), then a
    :class:`~.reference.RegressionError` if any case left its band."""
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        raise ConfigError(f"unknown reference case(s) {', '.join(unknown)}; cases: {', '.join(CASES)}")
    root = reference_root(root, "results/reference", "reference directory root")
    repo = Path(repo) if repo is not None else root.resolve().parents[1]
    if not update:
        check_references(cases or CASES, root)
    failures = 0
    for name in cases or CASES:
        if update:
            yield f"updated {update_case(name, repo, root, data_dir)}"
            continue
        try:
            check_case(name, repo, root, data_dir)
            yield f"ok    {name}"
        except RegressionError as exc:
            failures += 1
            yield f"FAIL  {exc}"
    if failures:
        raise RegressionError(f"{failures} reference case(s) left their band")
