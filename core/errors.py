"""User-facing errors.

Every error a user can cause (bad config, impossible partition, missing or
corrupt data) is a :class:`VFLError`. The CLI prints its message as one line
and exits with status 2; anything else is a bug and keeps its traceback.
Messages are written to stand alone: they name the offending key, party,
file or value.
"""


class VFLError(Exception):
    """Base class of errors caused by user input."""


class ConfigError(VFLError):
    """A configuration file or override is invalid."""


class PartitionError(ConfigError):
    """A feature partition is impossible (empty party, overlap, out of range...)."""


class DataError(VFLError):
    """A dataset is missing, malformed, or fails its checksum."""


class DivergedError(VFLError):
    """An iterative method produced non-finite values (e.g. rho too small)."""


class PartyLostError(VFLError):
    """A party's worker was lost mid-run and no worker took over its data in time."""
