"""A config as TOML text: the tables and values a ``vfl`` config holds (no TOML writer ships
with Python; ``tomllib`` only reads)."""

from __future__ import annotations

import json
import math
import re

__all__ = ["dumps"]

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key(k: str) -> str:
    return k if _BARE.fullmatch(k) else json.dumps(k, ensure_ascii=False)


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"TOML has no value for {v!r} in a config")
        return repr(v)
    if isinstance(v, (int, str)):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise ValueError(f"cannot write {v!r} as TOML")


def _table(lines: list[str], path: list[str], table: dict) -> None:
    plain = {k: v for k, v in table.items() if not _is_table(v) and not _is_tables(v)}
    for k, v in plain.items():
        lines.append(f"{_key(k)} = {_value(v)}")
    for k, v in table.items():
        if _is_table(v):
            lines += ["", "[" + ".".join(map(_key, path + [k])) + "]"]
            _table(lines, path + [k], v)
        elif _is_tables(v):
            for item in v:
                lines += ["", "[[" + ".".join(map(_key, path + [k])) + "]]"]
                _table(lines, path + [k], item)


def _is_table(v) -> bool:
    return isinstance(v, dict) and bool(v)


def _is_tables(v) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def dumps(config: dict, header: str = "") -> str:
    """``config`` (tables of values) as TOML; ``header`` lines become comments on top."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    _table(lines, [], config)
    return "\n".join(lines).lstrip("\n") + "\n"
