"""Public parameters from a declared schema: a Frictionless Table Schema.

The `Table Schema <https://specs.frictionlessdata.io/table-schema/>`_ is the
ecosystem's standard for publishing what a table's columns are. ``vfl`` reads
the part a private run needs, with pydantic (the ``frictionless`` package would
bring a dozen dependencies for a JSON file)::

    {"fields": [
        {"name": "customer_id", "type": "integer"},
        {"name": "age", "type": "integer", "constraints": {"minimum": 18, "maximum": 100}},
        {"name": "job", "type": "string", "constraints": {"enum": ["admin", "services"]}}
    ], "primaryKey": "customer_id"}

``integer`` and ``number`` fields are numeric, their ``minimum`` and ``maximum`` the
column's public bounds (``bounds = "schema"``, or ``"auto"``); ``string`` fields are
categorical, their ``enum`` the vocabulary; ``boolean`` fields numeric in [0, 1]. The
ID and label fields may be listed; they are not features. A field with another type is
refused, naming it.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from vfl.core.errors import ConfigError
from vfl.core.preprocessing import ColumnSpec, Schema

from .party_spec import PartySpec, resolve

__all__ = ["load_schema", "read_table_schema", "merge_schemas"]

_NUMERIC = ("integer", "number")


class _Constraints(BaseModel):
    model_config = ConfigDict(extra="allow")
    minimum: float | None = None
    maximum: float | None = None
    enum: list[Any] | None = None


class _Field(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    type: str = "string"
    constraints: _Constraints = _Constraints()


class _TableSchema(BaseModel):
    model_config = ConfigDict(extra="allow")
    fields: list[_Field]


def read_table_schema(path, *, skip=(), who: str = "") -> Schema:
    """A :class:`~vfl.core.preprocessing.Schema` from a Table Schema JSON file (fields named
    in ``skip``, the ID and label, left out)."""
    where = f"{who}: " if who else ""
    p = resolve(str(path))
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
        table = _TableSchema.model_validate(raw)
    except FileNotFoundError:
        raise ConfigError(f"{where}schema file not found: {p}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}schema {p.name} is not JSON ({exc})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(x) for x in first["loc"])
        raise ConfigError(
            f"{where}schema {p.name}: {at}: {first['msg']} (a Frictionless "
            'Table Schema has "fields": [{"name": ..., "type": ...}])'
        ) from None
    columns = []
    for f in table.fields:
        if f.name in skip:
            continue
        c = f.constraints
        try:
            if f.type in _NUMERIC:
                if c.enum is not None:
                    raise ValueError(
                        f'field {f.name!r}: an enum on a {f.type} field; declare a categorical column as type "string"'
                    )
                bounds = (c.minimum, c.maximum) if c.minimum is not None and c.maximum is not None else None
                columns.append(ColumnSpec(f.name, "numeric", bounds=bounds))
            elif f.type == "boolean":
                columns.append(ColumnSpec(f.name, "numeric", bounds=(0.0, 1.0)))
            elif f.type == "string":
                values = None if c.enum is None else tuple(str(v) for v in c.enum)
                columns.append(ColumnSpec(f.name, "categorical", values=values))
            else:
                raise ValueError(
                    f"field {f.name!r} has type {f.type!r}; vfl reads integer, number, boolean and string fields"
                )
        except ValueError as exc:
            raise ConfigError(f"{where}schema {p.name}: {exc}") from None
    try:
        return Schema(name=p.stem, columns=tuple(columns), citation=f"schema {p}")
    except ValueError as exc:
        raise ConfigError(f"{where}schema {p.name}: {exc}") from None


def load_schema(spec: PartySpec) -> Schema:
    """A party's declared schema (its ID and label fields left out)."""
    return read_table_schema(spec.schema, skip={spec.id, spec.label} - {None}, who=spec.who)


def merge_schemas(schemas) -> Schema | None:
    """One schema over every party's columns (None when no party declared one)."""
    given = [s for s in schemas if s is not None]
    if not given:
        return None
    columns = tuple(c for s in given for c in s.columns)
    return Schema(name="parties", columns=columns, citation="; ".join(s.citation for s in given))
