"""A solver's ``[solver]`` and ``[privacy]`` values as typed, frozen records.

Each solver declares its keys as :class:`~vfl.core.params.Param` objects;
:func:`params_model` turns a declaration into a pydantic model, one field per
key, its type from ``Param.kind``, its default from ``Param.default`` and its
description from ``Param.help`` (which names the paper's symbol). The config
layer validates and fills the tables; :meth:`vfl.core.solver.Solver.build`
receives them as these models (:meth:`~vfl.core.solver.Solver.typed_params`,
:meth:`~vfl.core.solver.Solver.typed_privacy`), validated again there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, create_model

from .params import Param

__all__ = ["Params", "params_model", "section_model", "typed"]


class Params(BaseModel):
    """Validated values of one section, read as attributes (``params.rho``); a key the
    solver does not declare is no attribute (``getattr(p, "delta", None)`` where a caller
    serves solvers that may not declare it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def values_dict(self) -> dict[str, Any]:
        """The values as the config table holds them."""
        return {k: getattr(self, k) for k in type(self).model_fields}

    def replace(self, **changes: Any) -> Params:
        """A copy with ``changes`` (validated)."""
        return type(self).model_validate({**self.values_dict(), **changes})


def _annotation(p: Param) -> Any:
    if p.kind is bool:
        kind: Any = bool
    elif p.kind is int:
        kind = int
    elif p.kind is float:
        kind = float | int  # an int stays an int (a default written as 1)
    elif p.kind is str:
        kind = Literal[p.choices] if p.choices else str
    elif p.kind is list:
        kind = list[float]
    else:  # pragma: no cover - a declaration bug
        raise TypeError(f"unsupported Param kind {p.kind!r}")
    return kind | None


def params_model(owner: str, section: str, params: tuple[Param, ...]) -> type[Params]:
    """The frozen model of ``params`` (``owner``'s ``[section]`` keys)."""
    fields: dict[str, Any] = {p.name: (_annotation(p), Field(p.default, description=p.help)) for p in params}
    name = "".join(w.capitalize() for w in f"{owner}_{section}".split("_")) + "Params"
    return cast(type[Params], create_model(name, __base__=Params, __doc__=f"``[{section}]`` of {owner}", **fields))


_MODELS: dict[tuple[type, str], type[Params]] = {}


def section_model(cls: Any, section: str) -> type[Params]:  # (a Solver class: solver imports us)
    """Solver class ``cls``'s model of ``section`` (``"solver"`` or ``"privacy"``), made once."""
    key = (cls, section)
    if key not in _MODELS:
        declared = cls.params if section == "solver" else cls.privacy_params
        _MODELS[key] = params_model(cls.name or cls.__name__, section, tuple(declared))
    return _MODELS[key]


def typed(model: type[Params], values: Mapping[str, Any] | Params | None) -> Params:
    """``values`` as ``model`` (a dict is validated, missing keys take their defaults)."""
    if isinstance(values, model):
        return values
    if isinstance(values, Params):
        values = values.values_dict()
    return model.model_validate(dict(values or {}))
