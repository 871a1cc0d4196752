"""A party service's PARTY.toml (:func:`read_party_config`): its ``[party]`` table (its
number, address, directory, certificate, key and CA, its privacy limits) beside the run's
public config, and what the party and the coordinator must agree on: the service's name and
methods, and the digest of each public section (:func:`public_digest`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vfl.core.errors import ConfigError

from ..config import Config, apply_overrides, config_from_dict, read_toml
from .service_tls import loopback

__all__ = ["METHODS", "PUBLIC", "SERVICE", "PartyConfig", "public_digest", "read_party_config"]

#: the gRPC service's name; its methods are ``/vfl.Party/<Method>``
SERVICE = "vfl.Party"
METHODS = ("Health", "Align", "Open", "Call", "Close")
#: the public config sections a party and the coordinator must agree on
PUBLIC = ("data", "preprocessing", "partition", "objective", "solver", "privacy")
_PARTY_KEYS = ("index", "listen", "directory", "tls", "insecure", "limits")
#: the [privacy] keys the coordinator chooses (the party's limits bound them)
_COORDINATORS = ("epsilon", "sigma", "budget_epsilon")
_LIMIT_KEYS = ("neighbours", "min_sigma", "max_epsilon", "budget_epsilon")
#: a party file table's keys that name where its files lie on its own machine
_LOCAL = ("path", "test_path", "schema")


@dataclass(frozen=True)
class PartyConfig:
    """The ``[party]`` table of a PARTY.toml."""

    index: int
    listen: str = "127.0.0.1:50051"
    directory: str = "."
    #: paths of its ``certificate``, ``key`` and ``ca``
    tls: dict[str, str] | None = None
    insecure: bool = False
    #: ``[party.limits]``, as the TOML gives them (checked by :func:`read_party_config`)
    limits: dict[str, Any] = field(default_factory=dict)

    @property
    def host(self) -> str:
        return self.listen.rpartition(":")[0].strip("[]")


def read_party_config(path: str | Path, overrides: Sequence[str] = ()) -> tuple[PartyConfig, Config]:
    """A PARTY.toml: its ``[party]`` table, and the run's public config (checked)."""
    raw = apply_overrides(read_toml(path), list(overrides))
    party = raw.pop("party", None)
    if not isinstance(party, dict):
        raise ConfigError(f"{path}: a party's config needs a [party] table (index, listen, directory, tls, limits)")
    unknown = sorted(set(party) - set(_PARTY_KEYS))
    if unknown:
        raise ConfigError(f"party.{unknown[0]} is not a key of [party] (keys: {', '.join(_PARTY_KEYS)})")
    index = party.get("index")
    if type(index) is not int or index < 1:
        raise ConfigError(f"party.index must be the party's number (1, 2, ...), got {index!r}")
    limits = dict(party.get("limits", {}))
    unknown = sorted(set(limits) - set(_LIMIT_KEYS))
    if unknown:
        raise ConfigError(f"party.limits.{unknown[0]} is not a limit (limits: {', '.join(_LIMIT_KEYS)})")
    for key in ("min_sigma", "max_epsilon", "budget_epsilon"):
        v = limits.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0):
            raise ConfigError(f"party.limits.{key} must be a positive number, got {v!r}")
    run = raw.setdefault("run", {})
    for key in ("backend", "parties", "tls", "insecure"):  # the coordinator's, not the party's
        run.pop(key, None)
    config = config_from_dict(raw, default_name=Path(path).stem)
    pc = PartyConfig(
        index=index,
        listen=str(party.get("listen", "127.0.0.1:50051")),
        directory=str(party.get("directory", ".")),
        tls=party.get("tls"),
        insecure=bool(party.get("insecure", False)),
        limits=limits,
    )
    if pc.insecure and not loopback(pc.host):
        raise ConfigError(
            f"party {index}: party.insecure (plaintext) is allowed on a loopback address only, not {pc.listen}"
        )
    if pc.tls is None and not pc.insecure:
        raise ConfigError(
            f"party {index}: [party.tls] (certificate, key, ca) is required, or party.insecure = true on loopback"
        )
    return pc, config


def public_digest(config: Config) -> dict[str, str]:
    """Per public section, a digest of its resolved values (what both ends must share)."""
    d = config.to_dict()
    # the noise the coordinator asks for is its own choice, which the party's floor and
    # budget bound; everything else of [privacy] (the relation, the clips) it must share
    d["privacy"] = {k: v for k, v in d["privacy"].items() if k not in _COORDINATORS}
    if d["data"].get("dataset") == "parties":  # where each party's files lie is its own
        options = dict(d["data"].get("options", {}))
        options["party"] = [{k: v for k, v in t.items() if k not in _LOCAL} for t in options.get("party", [])]
        d["data"] = {**d["data"], "options": options}
    return {
        k: hashlib.sha256(json.dumps(d.get(k), sort_keys=True, default=str).encode()).hexdigest()[:16] for k in PUBLIC
    }
