"""What the CLI tests share: running `vfl` in a subprocess, and the one-line error contract."""

from __future__ import annotations

import os
import subprocess
import sys
import time

#: A small vertical config (synthetic data, 2 parties); ``epochs`` is filled in.
SMALL = """
name = "small"
[data]
dataset = "synthetic"
options = {{ n_train = 300, n_test = 100, n_features = 12, seed = 3 }}
[partition]
columns = [5, 7]
[objective]
lam = 0.01
[solver]
epochs = {epochs}
"""


def invoke(*args):
    """``vfl ARGS`` in this process (the console entry point, exit codes and all).

    Returns an object with ``returncode``, ``stdout`` and ``stderr``, like
    :func:`vfl`, so that the same assertions apply; no interpreter start-up.
    """
    import contextlib
    import io
    import types

    from vfl.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return types.SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def vfl(*args, cwd=None, env=None, timeout=300):
    """``python -m vfl.cli.main ARGS`` with ``env`` added; the result has ``.seconds``."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "vfl.cli.main", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **(env or {})})
    proc.seconds = time.perf_counter() - t0
    return proc


def assert_one_line_error(proc, *fragments):
    """Exit status 2 and a single ``error: ...`` line holding every fragment."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
