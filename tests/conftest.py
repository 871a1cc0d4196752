"""Shared fixtures.

Tests that need the verified datasets use the ``data_dir`` fixture. They are
skipped when ``VFL_DATA_DIR`` is unset or does not hold the files, unless
``VFL_REQUIRE_DATA=1`` (as in ``.ci/run``), in which case they fail: CI must
never pass by silently skipping the real-data checks.
"""

import hashlib
import os
import pickle
import sys
from pathlib import Path

import pytest
from schedule import pytest_collection_modifyitems, pytest_configure, pytest_configure_node  # noqa: F401

# PYTHONDONTWRITEBYTECODE=1 (some shells set it) made every xdist worker rewrite and compile
# every test module and the package again, and every process a test starts compile the
# package again (~3.6 s a worker): the suite writes its bytecode caches (__pycache__, ignored
# by git), before the workers and those processes start
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Dask's statistical profiler samples every worker's stacks every 10 ms; no test reads its
# profiles. Off (in every worker process a test starts, through the environment) it saved
# 7.4 s of the 144 s of CPU that test_parties_slow*.py take (measured side by side)
os.environ.setdefault("DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED", "False")

# Dask's workers forked from one server per test process that has imported the libraries and
# vfl's party side once, as Dask's own suite starts them (distributed.utils.get_mp_context);
# spawned, the default, each worker imported them afresh: ~2.9 s of CPU a worker
# (test_parties_slow*.py took 109 s, 49-63 s so, measured side by side)
os.environ.setdefault("DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD", "forkserver")

if os.environ.get("PYTEST_XDIST_WORKER"):
    # one BLAS thread per xdist worker (set before numpy loads): the workers already use
    # every core, and BLAS threads spinning against the other worker only cost time
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

# numpy (under joblib and vfl) loads here, after the BLAS limit above: loaded before it, each
# worker's BLAS ran two threads against the other worker's (the suite took 407 s, not 320 s)
import joblib  # noqa: E402

from vfl.datasets.parties import join  # noqa: E402
from vfl.experiments.transport.service_tls import write_deployment  # noqa: E402
from vfl.plots import canvas as plots  # noqa: E402


def _preload_the_party_side() -> None:
    """Add vfl's party side (the actor and every solver family) to what Dask's forkserver
    imports once, before it forks the workers."""
    if os.environ.get("DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD") != "forkserver":
        return
    try:
        from distributed.utils import get_mp_context  # lazy: the fast tier starts no worker
    except ImportError:  # Dask is an optional dependency ([dask], in [test])
        return
    from vfl.experiments.registry import SOLVERS  # lazy: read only when Dask is there

    families = sorted({path.split(":")[0] for path in SOLVERS.values()})
    # (get_mp_context sets Dask's own list once: the list below replaces it, Dask's first)
    get_mp_context().set_forkserver_preload(
        ["distributed", "numpy", "scipy", "pandas", "vfl.experiments.transport.dask_actor", *families]
    )


_preload_the_party_side()


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Spread the tests over every core (pytest-xdist) unless the command line says otherwise.

    ``pytest`` alone runs as ``pytest -n auto --dist worksteal`` and ``pytest -n N`` as
    ``--dist worksteal`` (tests/schedule.py orders the collection for it); ``-n 0``,
    ``--dist ...`` or ``-p no:xdist`` choose otherwise, and a command naming only single
    tests (``file::test``) runs in this process.
    """
    option = config.option
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput") or option.collectonly:
        return
    if option.numprocesses is None:
        if config.args and all("::" in a for a in config.args):
            return
        option.numprocesses = "auto"
    if option.dist == "no" and option.numprocesses not in (0, "0"):
        # (-n N alone would be --dist load, whose first chunks are a quarter of the suite
        # each: the order of tests/schedule.py is made for worksteal's halves)
        option.dist = "worksteal"


def _require_data() -> bool:
    return os.environ.get("VFL_REQUIRE_DATA", "") not in ("", "0")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    raw = os.environ.get("VFL_DATA_DIR")
    reason = None
    if not raw:
        reason = "VFL_DATA_DIR is not set"
    elif not Path(raw).is_dir():
        reason = f"VFL_DATA_DIR={raw} is not a directory"
    elif not any(Path(raw, n).exists() for n in ("a9a", "a9a.bz2")):
        reason = f"VFL_DATA_DIR={raw} holds no a9a"
    if reason:
        if _require_data():
            pytest.fail(f"{reason} but VFL_REQUIRE_DATA=1", pytrace=False)
        pytest.skip(reason)
    return Path(raw).resolve()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Keep every test away from the user's real cache directory."""
    cache = tmp_path_factory.getbasetemp() / "vfl-cache"
    monkeypatch.setenv("VFL_CACHE_DIR", str(cache))


@pytest.fixture(autouse=True)
def _small_png_figures_only(request, monkeypatch):
    """Figures as PNG alone, unless the test is marked ``pdf``, and at 60 dpi, not 200.

    Drawing a figure costs the same for each format, and saving was measured at 28% of
    the fast tier's CPU, half of it the PDF copies that no test reads. The tests that
    check the PDF beside a PNG are marked and write both. Rasterizing is most of what is
    left: 44 s of the whole suite's CPU in savefig at 200 dpi (0.7 s a figure of
    dp-admm's, 0.33 s at 60 dpi). No test reads pixels; layouts are in inches.
    """
    monkeypatch.setitem(plots.STYLE, "savefig.dpi", 60)
    if request.node.get_closest_marker("pdf") is None:
        monkeypatch.setattr(plots, "VECTOR_SUFFIX", None)


def _open_dask_clusters() -> list:
    spec = sys.modules.get("distributed.deploy.spec")  # None: no test here has used Dask yet
    return [] if spec is None else [c for c in list(spec.SpecCluster._instances) if c.status.name != "closed"]


@pytest.fixture(autouse=True)
def _no_dask_cluster_left_open():
    """Fail the test that leaves a Dask cluster of its own unclosed (a module's shared
    cluster is open before the test, and stays open).

    Its ResourceWarning otherwise fires at some later garbage collection, inside
    whichever test runs then (once in CI: in the captured stderr of a CLI error test).
    """
    before = set(map(id, _open_dask_clusters()))
    yield
    left = [c for c in _open_dask_clusters() if id(c) not in before]
    if left:
        pytest.fail(f"Dask cluster(s) left open: {', '.join(map(repr, left))}", pytrace=False)


@pytest.fixture
def joblib_in_process(monkeypatch) -> list[int]:
    """``joblib.Parallel`` without its worker processes; returns the ``n_jobs`` of each pool.

    Every task and every result goes through pickle, as to and from a worker, and the
    tasks run here in order. For tests of a ``jobs > 1`` branch whose runs are tiny:
    starting two loky workers (each importing numpy, scipy, pandas, matplotlib) costs
    more CPU than such runs. Real worker processes stay exercised by the sweep and
    private-utility tests (``test_sweep.py``, ``test_reproduce_private.py``).
    """

    pools: list[int] = []
    real = joblib.Parallel

    class InProcessParallel:
        def __init__(self, n_jobs):
            pools.append(n_jobs)

        def __call__(self, tasks):
            return [
                pickle.loads(pickle.dumps(f(*args, **kwargs)))
                for f, args, kwargs in (pickle.loads(pickle.dumps(t)) for t in tasks)
            ]

    monkeypatch.setattr(joblib, "Parallel", InProcessParallel)
    # and where a module bound the name at its import (``from joblib import Parallel``)
    for module in [m for name, m in sys.modules.items() if name.startswith("vfl.")]:
        if getattr(module, "Parallel", None) is real:
            monkeypatch.setattr(module, "Parallel", InProcessParallel)
    return pools


@pytest.fixture(scope="session")
def deployment_certs(tmp_path_factory):
    """A CA and certificates for two parties and the coordinator (``vfl party certs``'
    code), made once per session: the party-service tests share them."""
    pytest.importorskip("grpc")

    out = tmp_path_factory.mktemp("certs")
    write_deployment(out, 3)
    return out


@pytest.fixture
def one_psi_per_id_list(tmp_path_factory, monkeypatch):
    """Each list of IDs aligned by one real PSI per test session, shared by every run that
    aligns the same IDs (the a9a configs split into the same party IDs; a PSI of a9a's ~49k
    IDs costs ~8 s of CPU): a run gets a copy of that alignment. The files are still read
    and checked, the rows joined and trained on as ever; the PSI itself and the alignment's
    record are checked by tests/test_party_files.py (its bit-for-bit test computes one when
    it comes first). For tests whose subject is not the PSI. (A file beside the workers'
    directories: any xdist worker reads it.)"""

    root = tmp_path_factory.getbasetemp()
    memo = (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / "psi-memo"
    memo.mkdir(exist_ok=True)
    real = join.align

    def align(parties, **options):
        digest = hashlib.sha256(repr(sorted(options.items())).encode())
        for _, ids, kind in parties:
            digest.update(f"{kind}:{len(ids)}:".encode() + "\n".join(map(str, ids)).encode())
        path = memo / f"{digest.hexdigest()}.pickle"
        if path.is_file():
            return pickle.loads(path.read_bytes())
        aligned = real(parties, **options)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_bytes(pickle.dumps(aligned))
        partial.replace(path)  # atomic: a worker aligning the same IDs meanwhile writes the same
        return aligned

    monkeypatch.setattr(join, "align", align)
