#!/usr/bin/env python3
"""Benchmark client on the official Python SDK (`mcp` 2.3.0).

`stdio_client` spawns the server (or, with `--url`, `streamable_http_client` connects to a
Streamable HTTP server: the legacy era, `initialize` and `Mcp-Session-Id`), `ClientSession`
initializes, then N echo calls; prints one JSON line like every other client of
switchboard-bench:

    python bench/py_client.py [--calls N] [--warmup W] [--inflight K] [--tool echo]
        [--arg text] [--text hello] (--server PROGRAM ARGS... | --url URL)

`--server` must come last. The gateway-peers scenario runs it with `--url` against every
gateway, as a check of the load driver's totals by a client that is not ours. Run it with the venv that scripts/peers.sh builds
(target/peers/venv/bin/python). In mcp 2.x the low-level client is still
`mcp.client.session.ClientSession` over `mcp.client.stdio.stdio_client`
(`mcp.client.Client` is a higher-level wrapper around the same session).
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import time

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def parse_args(argv: list[str]) -> dict:
    opts: dict = {
        "calls": 1000,
        "warmup": 50,
        "inflight": 1,
        "tool": "echo",
        "arg": "text",
        "text": "hello",
        "server": [],
        "url": None,
    }
    i = 0
    while i < len(argv):
        flag = argv[i]
        if flag == "--server":
            opts["server"] = argv[i + 1 :]
            break
        if i + 1 >= len(argv):
            raise SystemExit(f"{flag} needs a value")
        value = argv[i + 1]
        key = flag.removeprefix("--")
        if key in ("calls", "warmup", "inflight"):
            opts[key] = int(value)
        elif key in ("tool", "arg", "text", "url"):
            opts[key] = value
        else:
            raise SystemExit(f"unknown flag {flag}")
        i += 2
    if not opts["server"] and not opts["url"]:
        raise SystemExit("--server PROGRAM ARGS... (last) or --url URL is required")
    opts["inflight"] = max(1, opts["inflight"])
    return opts


def percentile(sorted_ns: list[int], pct: float) -> float:
    if not sorted_ns:
        return 0.0
    rank = min(len(sorted_ns), max(1, math.ceil(pct / 100 * len(sorted_ns))))
    return sorted_ns[rank - 1] / 1000


async def main() -> None:
    opts = parse_args(sys.argv[1:])
    arguments = {opts["arg"]: opts["text"]}
    started = time.perf_counter_ns()
    if opts["url"]:
        transport = streamable_http_client(opts["url"])
    else:
        params = StdioServerParameters(command=opts["server"][0], args=opts["server"][1:])
        transport = stdio_client(params)
    async with transport as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            init_ns = time.perf_counter_ns() - started

            async def call():
                result = await session.call_tool(opts["tool"], arguments)
                if getattr(result, "is_error", False) or getattr(result, "isError", False):
                    raise RuntimeError(f"tool error: {result}")
                return result

            for _ in range(opts["warmup"]):
                result = await call()
                text = getattr(result.content[0], "text", "") if result.content else ""
                if opts["text"] not in text:
                    raise RuntimeError(f"unexpected echo: {result}")

            calls = opts["calls"]
            latencies: list[int] = []
            remaining = [calls]

            async def worker() -> None:
                while remaining[0] > 0:
                    remaining[0] -= 1
                    t = time.perf_counter_ns()
                    await call()
                    latencies.append(time.perf_counter_ns() - t)

            t0 = time.perf_counter_ns()
            if opts["inflight"] == 1:
                await worker()
            else:
                await asyncio.gather(*(worker() for _ in range(opts["inflight"])))
            elapsed_s = (time.perf_counter_ns() - t0) / 1e9

    latencies.sort()
    protocol = getattr(init, "protocol_version", None) or getattr(init, "protocolVersion", None)
    print(
        json.dumps(
            {
                "client": "py",
                "calls": calls,
                "inflight": opts["inflight"],
                "elapsed_s": elapsed_s,
                "calls_per_s": calls / elapsed_s if elapsed_s > 0 else 0.0,
                "p50_us": percentile(latencies, 50),
                "p90_us": percentile(latencies, 90),
                "p99_us": percentile(latencies, 99),
                "min_us": latencies[0] / 1000 if latencies else 0.0,
                "max_us": latencies[-1] / 1000 if latencies else 0.0,
                "init_ms": init_ns / 1e6,
                "protocol": str(protocol) if protocol else None,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    asyncio.run(main())
