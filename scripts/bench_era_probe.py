#!/usr/bin/env python3
"""Connect time to a legacy-only (Python SDK 1.x) server: the `auto` probe order
(`server/discover`, then `initialize`) against `initialize` first (the era memo's order).

    scripts/bench_era_probe.py PYTHON [RUNS]

PYTHON is a Python whose `mcp` is 1.x (the pinned peers are 2.x, which speak both eras):
for example `python3 -m venv /tmp/mcp1 && /tmp/mcp1/bin/pip install 'mcp<2'`. It serves
`scripts/peers/fastmcp_server.py`. Runs `switchboard status --json` (spawn, handshake,
three listings: `startMs`) RUNS times for each order, interleaved in one run, and counts
the server's stderr lines. Uses `target/release/switchboard` if present, else debug.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def binary() -> Path:
    for profile in ("release", "debug"):
        path = ROOT / "target" / profile / "switchboard"
        if path.exists():
            return path
    sys.exit("build switchboard first (cargo build -p switchboard-cli)")


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    python = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    exe = binary()
    work = Path(tempfile.mkdtemp(prefix="switchboard-era-bench-"))
    stderr_file = work / "server-stderr.txt"
    server = f"exec {python} {ROOT / 'scripts/peers/fastmcp_server.py'} 2>>{stderr_file}"
    config = work / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"py1": {"command": "sh", "args": ["-c", server]}}}))
    memo = work / "eras.json"
    orders = {"probe first (before)": "off", "initialize first (after)": str(memo)}
    times: dict[str, list[int]] = {name: [] for name in orders}
    lines: dict[str, list[int]] = {name: [] for name in orders}

    def once(name: str) -> None:
        stderr_file.write_text("")
        env = dict(os.environ, SWITCHBOARD_ERA_MEMO=orders[name])
        out = subprocess.run(
            [exe, "status", "--json", "--config", config],
            env=env, capture_output=True, text=True, timeout=60, check=True,
        )
        row = json.loads(out.stdout)["servers"][0]
        times[name].append(row["startMs"])
        lines[name].append(len(stderr_file.read_text().splitlines()))

    once("initialize first (after)")  # primes the memo: the server is legacy
    for name in orders:
        times[name].clear()
        lines[name].clear()
    once("probe first (before)")  # warm-up
    times["probe first (before)"].clear()
    lines["probe first (before)"].clear()
    for _ in range(runs):
        for name in orders:
            once(name)

    base = statistics.median(times["probe first (before)"])
    print(f"{runs} runs each, interleaved; {exe.relative_to(ROOT)}; server {python}")
    for name in orders:
        median = statistics.median(times[name])
        print(
            f"{name:26} startMs median {median:6.0f} (min {min(times[name])}, max {max(times[name])}),"
            f" ratio {median / base:.2f}; server stderr lines {statistics.median(lines[name]):.0f}"
        )


if __name__ == "__main__":
    main()
