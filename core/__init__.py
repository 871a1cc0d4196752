"""Contracts shared by every layer: user-facing errors and the solver plug-in interface.

Nothing here imports from another ``vfl`` part, so algorithms, datasets,
experiments and the CLI can all depend on it without cycles.
"""

from .errors import ConfigError, DataError, DivergedError, PartitionError, VFLError

__all__ = ["ConfigError", "DataError", "DivergedError", "PartitionError", "VFLError"]
