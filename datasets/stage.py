"""The ``[preprocessing]`` section: one stage, the same for every setting and dataset.

Order: encode the categorical columns, scale the features, then the
per-record steps (intercept, ``row_clip``, ``normalize_rows``), which the
setting applies to each unit of ownership (a party's block in the vertical
setting, the whole row otherwise). Keys::

    [preprocessing]
    encoding = "onehot"        # categorical columns: onehot | ordinal
    categories = "auto"        # vocabularies: auto | schema | train | {column = ["a", "b"]}
    other = false              # onehot: unseen values -> an extra "<other>" column (else all zero)
    scaling = "none"           # none | standard | minmax | clip
    range = [0.0, 1.0]         # minmax: the target interval
    bounds = "auto"            # minmax / clip: auto | schema | train | public | [lo, hi] | {column = [lo, hi]}
    stats = "train"            # standard: train | public | {column = [mean, scale]}
    row_clip = 1.0             # scale each row (block) with a larger l2 norm onto that sphere
    normalize_rows = false     # each row (block) to unit l2 norm
    intercept = true           # a column of ones (vertical: party 1's block); default by setting

``auto`` takes the dataset's published schema where it has one (Adult's
vocabularies and declared ranges) and the training rows otherwise. A run
that claims a guarantee takes nothing from the training rows: where ``auto``
would, or ``train`` is set, it stops with one line naming the key, since
one record would then change what every other record becomes. ``public``
fits on rows declared public and disjoint from the private ones (the
horizontal setting's ``partition.public`` rows).

The section's keys and their check are :mod:`vfl.datasets.stage_spec`; this module fits
the stage a checked section describes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vfl.core.errors import ConfigError
from vfl.core.preprocessing import (
    Encoder,
    RawTable,
    RowSteps,
    Scaler,
)
from vfl.datasets.dataset import Dataset
from vfl.datasets.stage_spec import check_spec

__all__ = ["Stage", "fit_stage", "preprocess", "refuse_private"]


@dataclass(eq=False)
class Stage:
    """A fitted preprocessing stage: encoder, scaler (or how to fit it on public rows), rows.

    ``steps`` is the manifest's machine-readable record: every step with its
    parameters and ``source``.
    """

    encoder: Encoder
    rows: RowSteps
    scaler: Scaler | None  # None: fitted per split on the public rows
    scaling: dict  # kind, lower, upper, per-column sources / constants for the public fit
    sources: dict = field(default_factory=dict)
    private: bool = False

    @property
    def feature_names(self) -> list[str]:
        return self.encoder.feature_names

    @property
    def needs_public_rows(self) -> bool:
        return self.scaler is None

    def encode(self, table: RawTable, *, copy: bool = True):
        return self.encoder.transform(table, copy=copy)

    def fit_public(self, X_public) -> Scaler:
        """The scaler whose ``public`` parameters come from the encoded public rows."""
        if X_public is None or X_public.shape[0] == 0:
            raise ConfigError(
                "preprocessing: a parameter has source 'public' but the run has no "
                "public rows (set partition.public > 0, horizontal setting)"
            )
        return _make_scaler(self.scaling, self.encoder, X_public)

    def columns(self, table: RawTable, scaler: Scaler | None = None, *, copy: bool = True):
        """Encode and scale ``table`` (the column steps). ``copy=False``: when the steps change
        nothing (numeric records, no scaling) the result is ``table``'s own matrix, for a
        caller that only reads it (no second copy of the records)."""
        scaler = scaler or self.scaler
        # one copy at most: the scaler's result is a new matrix whenever it scales, and its own
        # copy (``copy``) when it does not
        return scaler.transform(self.encode(table, copy=False), copy=copy)

    def describe(self, unit: str, scaler: Scaler | None = None) -> list[dict]:
        names = self.feature_names
        steps = [self.encoder.describe(self.sources.get("categories", {}))]
        sc = scaler or self.scaler
        if sc is not None:
            step = sc.describe(names, self.sources.get("scaling"))
        else:
            step = {
                "step": "scale",
                "scaling": self.scaling["kind"],
                "source": self.sources.get("scaling"),
                "note": "fitted on each split's public rows (per repeat)",
            }
        steps.append(step)
        return steps + self.rows.describe(unit)


def _vocabularies(raw, spec: dict, layout) -> tuple[dict, dict]:
    vocab, sources, unpublished = {}, {}, []
    table = spec["categories"] if isinstance(spec["categories"], dict) else {}
    kinds = dict(zip(raw.train.names, raw.train.kinds))  # (a list's .index is quadratic)
    cats = [n for n in layout if kinds[n] == "categorical"]
    stray = sorted(set(table) - set(cats))
    if stray:
        raise ConfigError(
            f"preprocessing.categories.{stray[0]}: not a categorical column of "
            f"{raw.name} (categorical: {', '.join(cats) or 'none'})"
        )
    for name in cats:
        spec_col = raw.schema.column(name) if raw.schema is not None else None
        if name in table:
            vocab[name], sources[name] = table[name], "config"
        elif spec["categories"] in ("auto", "schema") and spec_col is not None and spec_col.values:
            vocab[name], sources[name] = spec_col.values, "schema"
        elif spec["categories"] == "schema":
            unpublished.append(name)
        else:
            rows = raw.vocabulary_rows if raw.vocabulary_rows is not None else raw.train
            values = rows.column(name).astype(str)
            vocab[name], sources[name] = tuple(sorted(set(values.tolist()))), "training_rows"
    if unpublished:
        raise ConfigError(
            f"preprocessing.categories = 'schema': {raw.name} publishes no "
            f"values for {_names(unpublished)}; list them in "
            + ", ".join(f"preprocessing.categories.{n}" for n in unpublished)
        )
    return vocab, sources


def _names(names) -> str:
    return f"column{'s' if len(names) > 1 else ''} " + ", ".join(map(repr, names))


def _user_listed(raw, name: str, source: str) -> str | None:
    """Where a vocabulary the user declared is written (a config list, or a Table Schema of
    the user's), or None for a dataset's published schema."""
    if source == "config":
        return f"preprocessing.categories.{name}"
    cited = raw.schema.citation if raw.schema is not None else ""
    if source == "schema" and cited.startswith("schema "):
        return f"the enum of field {name!r} in the {cited}"
    return None


def _check_listed(raw, vocab: dict, sources: dict) -> None:
    """A run that claims no guarantee: a value the file holds outside a list the user
    declared is a mistake in the list (a private run sends it to the other bucket)."""
    for name, values in vocab.items():
        where = _user_listed(raw, name, sources[name])
        if where is None:
            continue
        known = set(values) | {""}
        for part, table in (("training", raw.train), ("test", raw.test)):
            seen = set(table.column(name).astype(str).tolist()) - known
            if seen:
                shown = ", ".join(map(repr, sorted(seen)[:5]))
                raise ConfigError(
                    f"{where} misses {shown}{' ...' if len(seen) > 5 else ''}, "
                    f"which the {part} rows of column {name!r} hold: add "
                    f"{'them' if len(seen) > 1 else 'it'} to the list"
                )


def _scaled_columns(encoder: Encoder) -> np.ndarray:
    return np.flatnonzero(~encoder.onehot_columns)


def _column_of_output(encoder: Encoder) -> list[str]:
    """The raw column behind each output column."""
    out = []
    for n in encoder.layout:
        out += [n] * encoder._width(n)
    return out


def _scaling_plan(raw, spec: dict, encoder: Encoder, cat_sources: dict) -> tuple[dict, str]:
    """Per scaled output column: a constant (config / schema) or where to fit it."""
    kind = spec["scaling"]
    plan = {"kind": kind, "lower": 0.0, "upper": 1.0, "columns": _scaled_columns(encoder), "per_column": {}}
    if kind == "none":
        return plan, "none"
    if kind == "minmax":
        plan["lower"], plan["upper"] = spec["range"]
    owner = _column_of_output(encoder)
    names = {owner[j] for j in plan["columns"]}
    given = spec["bounds"] if kind in ("minmax", "clip") else spec["stats"]
    table = given if isinstance(given, dict) else {}
    stray = sorted(set(table) - names) if isinstance(given, dict) else []
    if stray:
        key = "bounds" if kind != "standard" else "stats"
        raise ConfigError(
            f"preprocessing.{key}.{stray[0]}: not a scaled column of {raw.name} "
            f"(scaled: {', '.join(sorted(names)[:8])}{' ...' if len(names) > 8 else ''})"
        )
    # columns a table leaves out follow "auto" (the schema, else the training rows)
    mode = given if isinstance(given, str) else ("standard" if kind == "standard" else "auto")
    sources, fitted, unpublished = set(), [], []
    kinds = dict(zip(raw.train.names, raw.train.kinds))
    for j in plan["columns"]:
        name = owner[j]
        col = raw.schema.column(name) if raw.schema is not None else None
        is_code = kinds[name] == "categorical"
        if isinstance(given, tuple):
            value, src = given, "config"
        elif name in table:
            value, src = table[name], "config"
        elif kind != "standard" and is_code and mode in ("auto", "schema"):
            # ordinal codes: the range of the codes follows from the vocabulary
            k = len(encoder.vocabularies[name])
            value, src = (0.0, float(k if encoder.other else max(k - 1, 1))), cat_sources[name]
        elif kind != "standard" and mode in ("auto", "schema") and col is not None and col.bounds is not None:
            value, src = col.bounds, "schema"
        elif mode == "schema":
            value, src = None, "unpublished"
            if name not in unpublished:
                unpublished.append(name)
        elif mode == "public":
            value, src = None, "public_rows"
        else:
            value, src = None, "training_rows"
            if name not in fitted:
                fitted.append(name)
        plan["per_column"][int(j)] = value
        sources.add(src)
    if unpublished:
        raise ConfigError(
            f"preprocessing.bounds = 'schema': {raw.name} declares no range for "
            f"{_names(unpublished)}; give " + ", ".join(f"preprocessing.bounds.{n} = [lo, hi]" for n in unpublished)
        )
    plan["sources"] = sources
    plan["fitted"] = fitted
    return plan, "+".join(sorted(sources)) if sources else "none"


def _make_scaler(plan: dict, encoder: Encoder, X_fit) -> Scaler:
    """A :class:`Scaler` from the plan; ``X_fit`` (encoded) supplies the fitted columns."""
    kind, cols = plan["kind"], plan["columns"]
    if kind == "none":
        return Scaler("none", cols[:0])
    lo, hi = np.zeros(cols.size), np.zeros(cols.size)
    fit = [k for k, j in enumerate(cols) if plan["per_column"][int(j)] is None]
    if fit:
        if X_fit is None:
            raise ConfigError("preprocessing: no rows to fit the scaling on")
        block = X_fit[:, cols[fit]]
        block = block.toarray() if hasattr(block, "toarray") else np.asarray(block)
    for k, j in enumerate(cols):
        v = plan["per_column"][int(j)]
        if v is not None:
            lo[k], hi[k] = v
    if fit:
        idx = np.asarray(fit)
        if kind == "standard":
            lo[idx], hi[idx] = block.mean(axis=0), block.std(axis=0)
        else:
            lo[idx], hi[idx] = block.min(axis=0), block.max(axis=0)
    if kind == "standard":
        return Scaler("standard", cols, mean=lo, scale=hi)
    return Scaler(kind, cols, lo=lo, hi=hi, lower=plan["lower"], upper=plan["upper"])


def _refuse_missing(spec: dict, categories: list, scaled: list) -> None:
    """A private run: ONE error naming every column whose public parameter is missing."""
    if not categories and not scaled:
        return
    key = "stats" if spec["scaling"] == "standard" else "bounds"
    what = []
    if categories:
        what.append(f"the categories of {', '.join(map(repr, categories))}")
    if scaled:
        what.append(f"the {key} of {', '.join(map(repr, scaled))} (scaling = {spec['scaling']!r})")
    fix = []
    if categories:
        fix.append(
            f"preprocessing.categories.{categories[0]} = [...] (the published values; likewise every column named)"
        )
    if scaled:
        fix.append(
            f"preprocessing.{key} (public constants: "
            + ("{column = [mean, scale]}" if key == "stats" else "[lo, hi] or {column = [lo, hi]}")
            + f") or preprocessing.{key} = 'public' (rows declared public)"
        )
    raise refuse_private(
        f"{len(categories) + len(scaled)} column(s) have no public parameter: "
        f"{' and '.join(what)} would be read off the training rows",
        " and ".join(fix) + ", or declare them in a schema (a Frictionless Table Schema: enum, minimum, maximum)",
    )


def refuse_private(what: str, key: str) -> ConfigError:
    return ConfigError(
        f"preprocessing: {what}, so one record would change what every other "
        f"record becomes and no epsilon covers it; this run claims a guarantee: "
        f"set {key}"
    )


def fit_stage(
    raw,
    spec: Mapping[str, Any],
    *,
    private: bool,
    intercept_default: bool = False,
    unit_rows: bool = False,
    solver: str = "",
) -> Stage:
    """Resolve every parameter's source and fit the column steps.

    ``private``: the run claims a guarantee, so nothing may come from the
    training rows. ``unit_rows``: the solver's analysis needs rows (blocks)
    of norm <= 1; without a bound <= 1 in ``spec``, rows are normalized and
    the record says the solver asked for it.
    """
    spec = check_spec(spec, raw.defaults)
    if private and raw.fitted:
        what, key = raw.fitted[0]
        raise refuse_private(f"{raw.name}: {what}", key)
    names = raw.train.names
    layout = raw.schema.layout(spec["encoding"]) if raw.schema is not None else names
    kinds = dict(zip(names, raw.train.kinds))
    vocab, cat_sources = _vocabularies(raw, spec, layout)
    if not private:
        _check_listed(raw, vocab, cat_sources)
    encoder = Encoder(
        layout=tuple(layout), kinds=kinds, vocabularies=vocab, encoding=spec["encoding"], other=spec["other"]
    )
    plan, scale_source = _scaling_plan(raw, spec, encoder, cat_sources)
    if private:
        _refuse_missing(spec, [n for n in layout if cat_sources.get(n) == "training_rows"], plan.get("fitted", []))
    scaler = None
    if "public_rows" not in plan.get("sources", ()):
        X_fit = encoder.transform(raw.train) if "training_rows" in plan.get("sources", ()) else None
        scaler = _make_scaler(plan, encoder, X_fit)
    intercept = intercept_default if spec["intercept"] is None else spec["intercept"]
    rows = RowSteps(intercept=intercept, row_clip=spec["row_clip"], normalize=spec["normalize_rows"])
    sources = {"categories": cat_sources, "scaling": scale_source}
    if unit_rows and (rows.bound is None or rows.bound > 1.0):
        rows = RowSteps(intercept=intercept, row_clip=None, normalize=True)
        sources["normalize_rows"] = f"required by {solver or 'the solver'} (rows of norm <= 1)"
    return Stage(encoder=encoder, rows=rows, scaler=scaler, scaling=plan, sources=sources, private=private)


def preprocess(raw, spec: Mapping[str, Any]):
    """``raw`` through a non-private stage's column *and* row steps: a plain :class:`Dataset`.

    For library use and tests; runs go through the settings, which apply the
    row steps per unit of ownership.
    """
    try:
        stage = fit_stage(raw, spec, private=False)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if stage.needs_public_rows:
        raise ConfigError("preprocessing: source 'public' needs a run with public rows")
    X_train = stage.rows.apply(stage.columns(raw.train))
    X_test = stage.rows.apply(stage.columns(raw.test))
    return Dataset(
        name=raw.name,
        X_train=X_train,
        y_train=raw.y_train,
        X_test=X_test,
        y_test=raw.y_test,
        description=raw.description,
        is_stand_in=raw.is_stand_in,
        checksums=raw.checksums,
        provenance={**raw.provenance, "feature_names": stage.feature_names, "preprocessing": stage.describe("row")},
    )
