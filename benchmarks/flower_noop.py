"""A no-op message through a local Flower SuperLink and SuperNode, and back (docs/deploy.md's
"Why gRPC, not Flower"): ``python -m benchmarks.flower_noop [--rounds 30]``.

Flower is not a dependency of vfl: this runs the ``flower-superlink``, ``flower-supernode``
and ``flwr`` commands of the Python named by ``VFL_FLWR_PYTHON`` (a scratch venv with
``pip install "flwr==1.20.0"``), plaintext on localhost. A ServerApp sends a ``query``
message with one small record to the one SuperNode and waits for its ClientApp's reply,
``--rounds`` times; it prints the median and the minimum seconds as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYPROJECT = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"
[project]
name = "noop"
version = "1.0.0"
dependencies = ["flwr>=1.20"]
[tool.hatch.build.targets.wheel]
packages = ["."]
[tool.flwr.app]
publisher = "vfl"
[tool.flwr.app.components]
serverapp = "noop.server_app:app"
clientapp = "noop.client_app:app"
[tool.flwr.app.config]
rounds = {rounds}
out = "{out}"
[tool.flwr.federations]
default = "local"
[tool.flwr.federations.local]
address = "127.0.0.1:9093"
insecure = true
"""
CLIENT = """from flwr.client import ClientApp
from flwr.common import ConfigRecord, Context, Message, RecordDict

app = ClientApp()


@app.query()
def query(msg: Message, context: Context) -> Message:
    return Message(RecordDict({"c": ConfigRecord({"ok": 1})}), reply_to=msg)
"""
SERVER = """import json, time
from flwr.common import ConfigRecord, Context, Message, RecordDict
from flwr.server import Grid, ServerApp

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    while not list(grid.get_node_ids()):
        time.sleep(0.2)
    node = list(grid.get_node_ids())[0]
    times = []
    for _ in range(int(context.run_config["rounds"])):
        msg = Message(RecordDict({"c": ConfigRecord({"x": 1})}), dst_node_id=node,
                      message_type="query")
        t = time.perf_counter()
        replies = list(grid.send_and_receive([msg]))
        times.append(time.perf_counter() - t)
        assert replies and not replies[0].has_error()
    times.sort()
    with open(context.run_config["out"], "w") as f:
        json.dump({"median_s": times[len(times) // 2], "min_s": times[0], "n": len(times)}, f)
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="a no-op through Flower's SuperLink")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    python = os.environ.get("VFL_FLWR_PYTHON")
    if not python:
        print("set VFL_FLWR_PYTHON to a Python with flwr 1.20 installed", file=sys.stderr)
        return 2
    bin_dir = Path(python).parent
    procs = []
    with tempfile.TemporaryDirectory() as tmp:
        app, out = Path(tmp) / "app", Path(tmp) / "result.json"
        (app / "noop").mkdir(parents=True)
        (app / "noop" / "__init__.py").write_text("")
        (app / "noop" / "client_app.py").write_text(CLIENT)
        (app / "noop" / "server_app.py").write_text(SERVER)
        (app / "pyproject.toml").write_text(PYPROJECT.format(rounds=args.rounds, out=out))
        env = {
            **os.environ,
            "FLWR_HOME": str(Path(tmp) / "flwr-home"),
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        }
        try:
            log = open(Path(tmp) / "flower.log", "w")
            procs.append(
                subprocess.Popen(
                    [bin_dir / "flower-superlink", "--insecure"], env=env, stdout=log, stderr=subprocess.STDOUT
                )
            )
            time.sleep(8)
            procs.append(
                subprocess.Popen(
                    [
                        bin_dir / "flower-supernode",
                        "--insecure",
                        "--superlink",
                        "127.0.0.1:9092",
                        "--clientappio-api-address",
                        "127.0.0.1:9096",
                    ],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
            time.sleep(6)
            subprocess.run(
                [bin_dir / "flwr", "run", str(app), "local", "--stream"],
                env=env,
                check=True,
                capture_output=True,
                timeout=600,
            )
            deadline = time.monotonic() + 60  # (the stream may end before the ServerApp)
            while not out.exists() and time.monotonic() < deadline:
                time.sleep(0.5)
            if not out.exists():
                raise RuntimeError((Path(tmp) / "flower.log").read_text()[-3000:])
            time.sleep(0.5)
            print(json.dumps(json.loads(out.read_text())))
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
