"""experiments.transport.process: the entry points' process-wide allocator setting."""

import subprocess
import sys

import pytest

# in a child process: the setting is process-wide and must not leak into the test session
_REUSE = """
import resource, numpy as np
from vfl.experiments.transport.process import keep_freed_memory
on = keep_freed_memory() if {on} else False
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
a = np.ones(8_000_000)  # 64 MB, above glibc's largest mmap threshold
del a
f = faults()
b = np.ones(8_000_000)
print(on, keep_freed_memory() == on if {on} else True, faults() - f)
"""


def _child(on: bool):
    out = subprocess.run(
        [sys.executable, "-c", _REUSE.format(on=on)], capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0] == "True", out[1] == "True", int(out[2])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_keep_freed_memory_reuses_a_freed_large_block_without_page_faults():
    on, again, faults = _child(True)
    if not on:
        pytest.skip("not glibc")
    assert again  # once per process; asking again says the same
    assert faults < 16  # the freed block's pages, still resident
    # by default the block is a fresh mapping: at least one fault per (huge) page of 2 MB
    assert _child(False)[2] >= 32
