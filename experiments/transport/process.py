"""Process-wide settings of a run's process, made once by the entry points (``vfl``, the
scale benchmark), never by the library: the algorithms keep no global state.

:func:`keep_freed_memory`: glibc's malloc serves every allocation above its mmap
threshold (at most 32 MB on 64-bit: four million float64s) as a fresh mapping that it
unmaps again when freed, so above four million rows every new N-vector of an epoch
(the state it keeps: the shares, their sum, ``z``, ``y``, ``zeta``; scipy's sparse
products) is a mapping whose pages the kernel faults in and zeroes, and then unmaps.
The iteration cannot give those vectors kept buffers without keeping a second
generation of its state (others may hold the old arrays). Told to take large blocks
from its heap and never to give the heap back, glibc reuses the memory a freed N-vector
leaves for the next one: at 10M rows x 2 parties (``python -m benchmarks scale``, one
comparison on a busy machine), minor page faults per epoch went from about 4,000 to 0 and
kernel time per epoch from 0.02-0.05 s to 0; the peak RSS is the live maximum, which the
heap then reuses (2.29 -> 2.30 x the data). The numbers are the same to the bit (the
allocator decides where an array lives, not what is computed).
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["keep_freed_memory"]

#: mallopt(3) parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
#: the largest value mallopt takes (an int): the heap's free top is never given back
_NEVER = 2**31 - 1

_done: bool | None = None


def keep_freed_memory() -> bool:
    """Have glibc's malloc serve large blocks from the heap and keep freed ones for reuse
    (``mallopt(M_MMAP_MAX, 0)``, ``mallopt(M_TRIM_THRESHOLD, 2**31 - 1)``); see the module
    docstring. Once per process; True if in effect (False elsewhere than Linux with glibc:
    nothing is changed there)."""
    global _done
    if _done is None:
        _done = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(None)
            except OSError:
                return False
            # glibc only (musl's mallopt does nothing)
            if not (hasattr(libc, "gnu_get_libc_version") and hasattr(libc, "mallopt")):
                return False
            mallopt = libc.mallopt
            mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
            _done = mallopt(_M_TRIM_THRESHOLD, _NEVER) == 1 and mallopt(_M_MMAP_MAX, 0) == 1
    return _done
