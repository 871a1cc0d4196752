"""Party files on a remote backend: each party reads its own file, the PSI crosses its channel.

In-process, one process reads every party's file and aligns them (:mod:`vfl.datasets.parties`).
On the party services and on Dask each party's process reads its own ``[[data.party]]``
file alone (:class:`OwnParty`: the path travels, never the data), answers the label
holder's PSI (:func:`~vfl.datasets.parties.align.align_with`) with typed messages
(:mod:`~vfl.datasets.parties.psi`'s header and fixed-width values), keeps its rows in the
agreed order, and builds its own block from them through the same preprocessing stage as
an in-process run (the column steps act per column, the row steps per party's block), so
the numbers agree to the bit. The coordinator, the label holder, reads party 1's file
alone (:func:`label_holder_records`) and holds the labels, its own block and, for the
other parties, empty placeholders of their widths (:class:`LabelHolderSetting`): the
references that need every party's columns are not available to it.

One alignment frame (:func:`frame`): a ``step`` message (the step and the part, train or
test), then the step's messages: ``psi`` (the client's request; the reply is the server's
setup and response), ``agree`` (the joint key and the intersection's tags; the reply is
empty), ``widths`` (every party's column count, for the party's own calibration).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from vfl.core.errors import ConfigError, DataError
from vfl.core.layouts import VerticalData
from vfl.core.protocol import UnitData
from vfl.datasets.parties import (
    check_parties,
    party_table,  # (its reader looked up at each call)
)
from vfl.datasets.parties.align import LocalPeer, align_with, keep
from vfl.datasets.parties.join import assemble
from vfl.datasets.parties.psi import _HEADER, pack, unpack

from .config import Config
from .distribution import fit_config_stage
from .repeat_setup import _prepare
from .run_data import _alignment_options, _split_seed, _strict
from .vertical_setting import VerticalSetting

__all__ = [
    "OwnParty",
    "RemotePeer",
    "LabelHolderSetting",
    "frame",
    "messages",
    "recording",
    "label_holder_records",
    "party_options",
]

PARTS = ("train", "test")
STEPS = {"psi": 1, "agree": 2, "widths": 3}
_WORD = {"train": "training", "test": "test"}


def party_options(config: Config) -> dict:
    """``[data]``'s options as a run reads them (the split seed and the alignment's key
    seed filled in: :func:`~.run_data._load_config_dataset`)."""

    options = dict(config.data.options)
    if _split_seed(config) is not None:
        options["split_seed"] = config.run.seed
    options["alignment"] = _alignment_options(config)
    return options


def frame(step: str, part: str, *messages: bytes) -> bytes:
    """One alignment frame: the step and the part, then the step's messages."""
    return pack("step", 1, bytes([STEPS[step], PARTS.index(part)])) + b"".join(messages)


def messages(data: bytes) -> list[bytes]:
    """The packed messages of ``data``, each checked by its header (anything else raises)."""
    out, at = [], 0
    while at < len(data):
        if len(data) - at < _HEADER.size:
            raise ValueError("alignment: a truncated message")
        _, _, width, count = _HEADER.unpack_from(data, at)
        end = at + _HEADER.size + width * count
        if end > len(data):
            raise ValueError("alignment: a truncated message")
        out.append(bytes(data[at:end]))
        at = end
    return out


def recording(call, kept: list):
    """``call``, keeping every frame past the PSI (the agreed order, the widths): a party
    restarted mid-run is told them again (the same rows, in the same order; no PSI again)."""

    def recorded(data: bytes) -> bytes:
        if unpack(messages(data[: _HEADER.size + 2])[0], "step", 1)[1][0] != STEPS["psi"]:
            kept.append(data)
        return call(data)

    return recorded


class OwnParty:
    """Party ``m``'s own file, its side of the alignment and, once aligned, its block."""

    def __init__(self, config: Config, m: int, *, strict: bool):

        self.config, self.m, self.strict = config, m, strict
        self.options = party_options(config)
        specs, self.spec = check_parties(self.options)
        if not 1 <= m <= len(specs):
            raise ConfigError(f"party {m}: [data] has {len(specs)} [[data.party]] tables")
        self.n_parties = len(specs)
        self.table = party_table.load_party(specs[m - 1], strict=strict, id_type=self.spec.id_type)
        self.who = self.table.spec.who
        self.parts = [p for p in PARTS if getattr(self.table, p) is not None]
        self.rows: dict = {}
        self.data: UnitData | None = None  # its block, once every part is aligned
        self.raw = None
        self.objective = None

    @property
    def aligned(self) -> bool:
        return self.data is not None

    def facts(self) -> dict:
        return {"id_type": self.table.id_type, "parts": self.parts, "aligned": self.aligned}

    def peer(self, part: str) -> LocalPeer:
        return LocalPeer(self.who, getattr(self.table, part).ids, self.table.id_type)

    def serve(self, data: bytes, cls) -> bytes:
        """One alignment frame of the label holder's, answered."""
        got = messages(data)
        if not got:
            raise ValueError("alignment: an empty frame")
        _, head = unpack(got[0], "step", 1)
        if len(head) != 2 or head[0] not in STEPS.values() or head[1] >= len(PARTS):
            raise ValueError("alignment: an unknown step")
        step, part = head[0], PARTS[head[1]]
        if step != STEPS["widths"] and self.aligned:  # its rows are fixed for the run
            raise DataError(f"{self.who}: aligned already; its rows and their order are fixed for the run")
        if step != STEPS["widths"] and part not in self.parts:
            raise DataError(f"{self.who}: holds no {_WORD[part]} file")
        if step == STEPS["psi"] and len(got) == 2:
            setup, response = self.peer(part).psi(got[1])
            return setup + response
        if step == STEPS["agree"] and len(got) == 3:
            self.rows[part] = keep(self.who, got[1], got[2], getattr(self.table, part).ids)
            if all(p in self.rows for p in self.parts):
                self._build(cls)
            return b""
        if step == STEPS["widths"] and len(got) == 2 and self.aligned:
            count, values = unpack(got[1], "widths", 8)
            widths = np.frombuffer(values, dtype="<u8").astype(int).tolist()
            if count != self.n_parties or widths[self.m - 1] != self.width:
                raise DataError(
                    f"{self.who}: the coordinator's widths {widths} do not give this party its {self.width} columns"
                )
            self.widths = widths
            return b""
        raise ValueError("alignment: a step out of order or with the wrong messages")

    def _build(self, cls) -> None:
        """Its block, from its aligned rows, through the run's own preprocessing stage."""

        rows = {part: [self.rows[part]] for part in self.parts}
        raw = assemble([self.table], rows, self.options, strict=self.strict, n_parties=self.n_parties)
        setting = own_setting(self.config, raw, cls, self.m)
        prepared = _prepare(setting, self.config, 0)
        k = self.m - 1
        self.data = UnitData(k, self.m, self.n_parties, (prepared.data.blocks[0],), (prepared.test[0],))
        self.objective = prepared.objective
        self.rows_n = int(prepared.data.blocks[0].shape[0])
        self.width = int(prepared.data.blocks[0].shape[1])
        self.test_rows = int(prepared.test[0].shape[0])


def own_setting(config: Config, raw, cls, m: int, kind=VerticalSetting) -> VerticalSetting:
    """The vertical setting of one party's own columns: the run's stage, its per-record steps
    on the party's block, the intercept column in party 1's block only."""
    stage = fit_config_stage(config, raw, cls)
    if m != 1:
        stage = replace(stage, rows=replace(stage.rows, intercept=False))
    try:
        return kind(config, raw, stage)
    except ValueError as exc:
        raise DataError(str(exc)) from None


class RemotePeer:
    """A party elsewhere, as :func:`align_with` sees it: ``call(frame) -> reply`` carries an
    alignment frame to the party's process (a gRPC call, a Dask actor's method)."""

    def __init__(self, who: str, id_type: str, part: str, call):
        self.who, self.id_type, self.part, self.call = who, id_type, part, call

    def psi(self, request: bytes) -> tuple[bytes, bytes]:
        got = messages(self.call(frame("psi", self.part, request)))
        if len(got) != 2:
            raise ValueError(f"{self.who}: its PSI reply is not a setup and a response")
        return got[0], got[1]

    def keep(self, key_message: bytes, tag_message: bytes):
        self.call(frame("agree", self.part, key_message, tag_message))
        return None  # the party keeps its rows where it is


def send_widths(widths: list[int], call) -> None:
    call(frame("widths", "train", pack("widths", 8, np.asarray(widths, dtype="<u8").tobytes())))


def label_holder_records(config: Config, remote: list[tuple], own_call=None):
    """Party 1's file, aligned with the other parties where they are: ``remote`` lists
    ``(who, id_type, parts, call)`` for parties 2, 3, ...; ``own_call``: party 1's own service
    (the label holder's organisation), told the agreed order too. Returns the label holder's
    records (party 1's columns, the labels) in the agreed order."""

    options = party_options(config)
    specs, spec = check_parties(options)
    strict = _strict(config)
    table = party_table.load_party(specs[0], strict=strict, id_type=spec.id_type)
    parts = [p for p in PARTS if getattr(table, p) is not None]
    for who, _, theirs, _ in remote:
        if list(theirs) != parts:
            raise DataError(
                f"{who}: holds {' and '.join(theirs) or 'no'} file(s), party 1 "
                f"{' and '.join(parts)}: give every party a test_path or none"
            )
    alignments = {}
    for part in parts:
        peers = [RemotePeer(who, kind, part, call) for who, kind, _, call in remote]
        own = None if own_call is None else RemotePeer(table.spec.who, table.id_type, part, own_call)
        alignments[part] = align_with(
            (table.spec.who, getattr(table, part).ids, table.id_type),
            peers,
            min_rows=spec.min_rows if part == "train" else 1,
            seed=spec.seed,
            part=_WORD[part],
            own=own,
        )
    raw = assemble(
        [table],
        {part: [a.rows[0]] for part, a in alignments.items()},
        options,
        strict=strict,
        alignments=alignments,
        n_parties=len(specs),
    )
    raw.provenance["options"] = dict(options)
    return raw


class LabelHolderSetting(VerticalSetting):
    """The coordinator's view of a party-file run on a remote backend: party 1's block and
    the labels, and for every other party an empty placeholder of its width (its block is
    on its own machine). The references need every party's columns: none here."""

    widths: list[int] | None = None

    def prepare(self, streams):
        prepared = super().prepare(streams)
        if self.widths is None:
            return prepared
        N, T = prepared.data.blocks[0].shape[0], prepared.test[0].shape[0]
        blocks = [prepared.data.blocks[0]] + [sp.csr_matrix((N, w)) for w in self.widths[1:]]
        test = [prepared.test[0]] + [sp.csr_matrix((T, w)) for w in self.widths[1:]]
        parties = [{"party": m + 1, "columns": int(w)} for m, w in enumerate(self.widths)]
        return replace(
            prepared,
            data=VerticalData(blocks, prepared.data.y),
            test=test,
            distribution={
                **prepared.distribution,
                "parties": parties,
                "party_files": "each party's own file, read by that party",
            },
        )

    def baselines(self, prepared, *, use_cache: bool, which: str = "all") -> dict:
        return {}
