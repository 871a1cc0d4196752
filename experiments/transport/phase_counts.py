"""What a remote backend of the unit transport counts per phase (protocol, diagnostics,
inference, control): the codec's payload and framing of every frame, and the bytes the
transport itself carried, measured by the backend (TCP_INFO for Dask, the kernel's socket
counters for the party services). Both backends report them in the manifest's
``communication.transport``."""

from __future__ import annotations

from vfl.core.protocol import INFERENCE, PROTOCOL, Kind, nbytes

__all__ = ["PhaseCounts"]


class PhaseCounts:
    """Mixed into a :class:`~vfl.core.units.Units` backend; call :meth:`_init_counts` in its
    constructor and :meth:`_count_carried` with what the transport carried for a phase."""

    def _init_counts(self) -> None:
        #: bytes the transport carried per phase over the run, and of the last scoring
        self.carried_bytes = {kind: 0 for kind in Kind}
        self.last_scoring: int | None = None
        #: the codec's payload and framing per phase, over every session
        self.payload = {kind: 0 for kind in Kind}
        self.framing = {kind: 0 for kind in Kind}

    def _framed(self, kind: Kind, frame: bytes, request: object, raw: bytes, reply: object | None) -> None:
        payload = nbytes(request) + (0 if reply is None else nbytes(reply))
        self.payload[kind] += payload
        self.framing[kind] += len(frame) + len(raw) - payload

    def _count_carried(self, kind: Kind, carried: int) -> None:
        self.carried_bytes[kind] += carried
        if kind is INFERENCE:
            self.last_scoring = carried

    @property
    def transport(self) -> int:
        """Bytes the transport carried for the protocol's rounds over the run."""
        return self.carried_bytes[PROTOCOL]

    @property
    def inference_transport(self) -> int | None:
        """Bytes the transport carried for the last scoring of the test rows (None before)."""
        return self.last_scoring

    def phases(self) -> dict[str, dict[str, int]]:
        """Per phase: what the transport carried, and the codec's payload and framing."""
        return {
            kind.value: {
                "tcp_bytes": self.carried_bytes[kind],
                "payload_bytes": self.payload[kind],
                "framing_bytes": self.framing[kind],
            }
            for kind in Kind
        }
