#!/usr/bin/env python3
"""A small FastMCP-style MCP server used as a real third-party peer in Switchboard's tests.

Run it with the pinned venv that scripts/peers.sh builds:

    target/peers/venv/bin/python scripts/peers/fastmcp_server.py            # stdio
    target/peers/venv/bin/python scripts/peers/fastmcp_server.py --http 8765  # streamable HTTP

Tools:
    echo(text)                  -> text                 (readOnlyHint)
    add(a, b)                   -> a + b                (readOnlyHint)
    slow(duration_s=5, steps=5) -> "done"; sleeps in `steps` equal steps and sends
                                   progress (i, steps) after each one; stops at once
                                   when the request is cancelled.

Prompts:
    review(code, language?)     -> one user message asking to review `code`
                                   (in `language` when it is given).

Resources:
    peer://readme               text/plain, a fixed line of text (README_TEXT)
    peer://logo.png             image/png, the ten bytes LOGO_BYTES (a blob)
    peer://notes/{name}         template, text/plain: "Note {name}."

In mcp 2.x the SDK's `FastMCP` class is `mcp.server.mcpserver.MCPServer`
(`mcp.server.fastmcp` only raises an ImportError pointing there), so that is
what this imports; the older name is tried first so the file also runs on mcp 1.x
(where the HTTP address is a server setting rather than an argument of `run`).
In stdio mode the server exits when its stdin reaches EOF. With `--http PORT` it
serves streamable HTTP on http://127.0.0.1:PORT/mcp (loopback only); with `--http 0`
on a port it binds itself, printing that URL as the first line of stdout.
"""

from __future__ import annotations

import argparse
import asyncio

try:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP  # type: ignore[import-not-found]
except ImportError:  # mcp 2.x: FastMCP was renamed MCPServer
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as FastMCP
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(readOnlyHint=True)

try:
    mcp = FastMCP("switchboard-fastmcp-peer", version="0.1.0", log_level="WARNING")
except TypeError:  # mcp 1.x takes no `version`
    mcp = FastMCP("switchboard-fastmcp-peer", log_level="WARNING")

README_TEXT = "This is the Switchboard FastMCP peer."
# The PNG signature and two more bytes: not UTF-8, with a NUL and a 0xFF.
LOGO_BYTES = b"\x89PNG\r\n\x1a\n\x00\xff"


@mcp.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Return `text` unchanged."""
    return text


@mcp.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    """Return a + b."""
    return a + b


@mcp.tool()
async def slow(ctx: Context, duration_s: float = 5.0, steps: int = 5) -> str:
    """Sleep `duration_s` seconds in `steps` steps, reporting progress (i, steps) after each."""
    steps = max(1, int(steps))
    per_step = max(0.0, float(duration_s)) / steps
    for i in range(1, steps + 1):
        # asyncio.sleep is a cancellation point: a cancelled request raises
        # CancelledError here and the tool stops without finishing.
        await asyncio.sleep(per_step)
        await ctx.report_progress(i, steps)
    return "done"


@mcp.prompt()
def review(code: str, language: str | None = None) -> str:
    """Ask for a review of a piece of code."""
    if language is None:
        return f"Please review this code:\n{code}"
    return f"Please review this {language} code:\n{code}"


@mcp.resource("peer://readme", name="readme", description="About this peer.", mime_type="text/plain")
def readme() -> str:
    return README_TEXT


@mcp.resource("peer://logo.png", name="logo", description="A few bytes of PNG.", mime_type="image/png")
def logo() -> bytes:
    return LOGO_BYTES


@mcp.resource("peer://notes/{name}", name="note", description="A note by name.", mime_type="text/plain")
def note(name: str) -> str:
    return f"Note {name}."


def serve_on_a_port_of_its_own() -> None:
    """Bind 127.0.0.1:0, print the endpoint's URL as the first line of stdout, then serve.

    The socket listens before the URL is printed, so no other process can take the port
    between the two (as it could from a port that was free a moment ago).
    """
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # As uvicorn does for a port it is given: so the server can be started again on this
    # port while connections it accepted linger in TIME_WAIT (Linux needs both sockets to
    # allow it).
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    if hasattr(mcp.settings, "port"):  # mcp 1.x: the host check reads the settings
        mcp.settings.host = "127.0.0.1"
        mcp.settings.port = port
        app = mcp.streamable_http_app()
    else:
        app = mcp.streamable_http_app(host="127.0.0.1")
    print(f"http://127.0.0.1:{port}/mcp", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    asyncio.run(server.serve(sockets=[sock]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--http",
        metavar="PORT",
        type=int,
        help="serve streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio; with 0, on a "
        "port of its own, printing the endpoint's URL as the first line of stdout",
    )
    args = parser.parse_args()
    if args.http is None:
        mcp.run("stdio")
    elif args.http == 0:
        serve_on_a_port_of_its_own()
    elif hasattr(mcp.settings, "port"):  # mcp 1.x: the address is a server setting
        mcp.settings.host = "127.0.0.1"
        mcp.settings.port = args.http
        mcp.run("streamable-http")
    else:  # mcp 2.x: the address is an argument of `run`
        mcp.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
