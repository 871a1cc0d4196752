"""The order the suite runs in over xdist workers: the longest tests start first.

``--dist worksteal`` hands each of the W workers one contiguous block of the collection
and later moves tests from the longest queue to an idle worker. A test of a minute that
starts last keeps one worker busy while the other idles, so the collection is reordered:
the long tests (by their durations in the previous run, kept in pytest's cache; without
it, the ``slow`` ones) are dealt to the W blocks longest first, each to the block with
the least of them so far, and head their block; the others follow in collection order.

The controller reads the durations once and hands them to every worker
(``workerinput``), so every worker collects the same order even when another session
rewrites the cache meanwhile. Only the order changes, never what a test does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

KEY = "vfl/durations"
#: a test at least this long (seconds, setup and teardown included) is dealt first
LONG = 1.0
#: the long tests' seconds on 2 cores, committed: a fresh clone (CI) has no pytest cache, and
#: without durations its slow tier is dealt in collection order.
#: ``VFL_DURATIONS_FILE=tests/durations.json pytest`` rewrites it from the run.
COMMITTED = Path(__file__).with_name("durations.json")


def _durations(config) -> dict:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return workerinput.get("vfl_durations", {})
    cache = getattr(config, "cache", None)
    known = cache.get(KEY, {}) if cache is not None else {}
    return known or (json.loads(COMMITTED.read_text()) if COMMITTED.is_file() else {})


class _Recorder:
    """(the controller, or a run without xdist) each test's seconds, kept for the next run."""

    def __init__(self, config):
        self.config, self.known, self.measured = config, _durations(config), {}

    def pytest_runtest_logreport(self, report):
        self.measured[report.nodeid] = self.measured.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self, session):
        cache = getattr(self.config, "cache", None)
        if cache is not None and self.measured:
            cache.set(KEY, {**self.known, **{k: round(v, 2) for k, v in self.measured.items()}})
        target = os.environ.get("VFL_DURATIONS_FILE")
        if target and self.measured:
            long = {k: round(v, 1) for k, v in sorted(self.measured.items()) if v >= LONG}
            Path(target).write_text(json.dumps(long, indent=0) + "\n")


def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        config._vfl_recorder = _Recorder(config)  # reads the durations before any worker starts
        config.pluginmanager.register(config._vfl_recorder, "vfl-durations")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """(xdist) every worker orders its collection by the controller's copy."""
    node.workerinput["vfl_durations"] = node.config._vfl_recorder.known


def _workers(config) -> int:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return int(workerinput.get("workercount", 1))
    return 1


def pytest_collection_modifyitems(config, items):
    workers = _workers(config)
    if workers < 2 or len(items) < 2 * workers:
        return
    known = _durations(config)
    if known:
        cost = {item.nodeid: known.get(item.nodeid, 0.0) for item in items}
    else:  # no previous run: the slow tier counts as long, in collection order
        cost = {item.nodeid: float(item.get_closest_marker("slow") is not None) for item in items}
    order = {item.nodeid: k for k, item in enumerate(items)}
    long = sorted((i for i in items if cost[i.nodeid] >= LONG), key=lambda i: (-cost[i.nodeid], order[i.nodeid]))
    if not long:
        return
    rest = [i for i in items if cost[i.nodeid] < LONG]
    # worksteal's first split: worker k gets the next len(pending) // (W - k) tests
    sizes, left = [], len(items)
    for k in range(workers):
        sizes.append(left // (workers - k))
        left -= sizes[-1]
    heads = [[] for _ in range(workers)]
    load = [0.0] * workers
    for item in long:  # longest first, each to the least loaded block with room
        open_ = [k for k in range(workers) if len(heads[k]) < sizes[k]]
        k = min(open_, key=lambda b: (load[b], b))
        heads[k].append(item)
        load[k] += cost[item.nodeid]
    reordered = []
    for k in range(workers):
        take = sizes[k] - len(heads[k])
        reordered += heads[k] + rest[:take]
        rest = rest[take:]
    assert not rest and len(reordered) == len(items)
    items[:] = reordered
