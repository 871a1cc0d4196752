"""What the CLI tests share: running `vfl`, and the one-line error contract.

:func:`vfl` runs the console entry point (``vfl.cli.main:main``) in this
process, inside click's :class:`~click.testing.CliRunner` isolation: no
interpreter start-up and no re-import per call, the same exit codes, stdout
and stderr as the installed ``vfl`` prints. :func:`vfl_process` starts a real
``python -m vfl.cli.main``; only the few end-to-end tests use it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
import warnings

from click.testing import CliRunner

from vfl.cli.main import main

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


def _show_on_stderr(message, category, filename, lineno, file=None, line=None):
    """The interpreter's own ``warnings.showwarning``: the warning on (the current) stderr.

    Under pytest the module-level one feeds pytest's recorder instead, so a
    warning ``main`` shows for a successful command would not reach the
    captured stderr as it reaches a user's terminal.
    """
    (file or sys.stderr).write(warnings.formatwarning(message, category, filename, lineno, line))


def vfl(*args, cwd=None, env=None, timeout=None, input=None):
    """``vfl ARGS`` in this process: the console entry point, exit codes and all.

    ``cwd`` is the working directory during the call and ``env`` is added to
    the environment (both restored afterwards); ``timeout`` is accepted for
    the signature of :func:`vfl_process` and ignored. Returns an object with
    ``returncode``, ``stdout``, ``stderr`` and ``seconds``. An exception that
    escapes ``main`` (exit status 1 in a shell: a bug) is raised here.
    """

    runner = CliRunner()
    env = {k: None if v is None else str(v) for k, v in (env or {}).items()}  # None: unset
    previous = os.getcwd()
    t0 = time.perf_counter()
    with runner.isolation(input=input, env=env) as (out, err, _), warnings.catch_warnings():
        # (catch_warnings restores showwarning and the filters.) Outside main, the
        # interpreter's default: an earlier test's object collected during this call (its
        # ResourceWarning) is not this command's output
        warnings.filterwarnings("ignore", category=ResourceWarning)
        warnings.showwarning = _show_on_stderr
        try:
            if cwd is not None:
                os.chdir(cwd)
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:  # as the interpreter would turn it into a status
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            os.chdir(previous)
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr = out.getvalue(), err.getvalue()
    return types.SimpleNamespace(
        returncode=code, stdout=stdout.decode(), stderr=stderr.decode(), seconds=time.perf_counter() - t0
    )


#: The older name of :func:`vfl`, kept for the tests that call it so.
invoke = vfl


def vfl_process(*args, cwd=None, env=None, timeout=300):
    """``python -m vfl.cli.main ARGS`` in a new process, ``env`` added; the result has ``.seconds``."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "vfl.cli.main", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )
    proc.seconds = time.perf_counter() - t0
    return proc


def assert_one_line_error(proc, *fragments):
    """Exit status 2 and a single ``error: ...`` line holding every fragment."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
