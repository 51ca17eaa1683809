#!/usr/bin/env python3
"""FastMCP's proxy in front of one stdio server, over Streamable HTTP on loopback.

The gateway-peers benchmark scenario's FastMCP peer (fastmcp 4.2.3, in the venv that
scripts/peers/gateways.sh builds: target/peers/gateways/fastmcp-venv):

    fastmcp-venv/bin/python scripts/peers/fastmcp_proxy.py --port PORT -- PROGRAM ARGS...

serves the stdio server PROGRAM ARGS... at http://127.0.0.1:PORT/mcp. FastMCP 4 has no
`FastMCP.as_proxy` any more; `fastmcp.server.create_proxy` is its replacement (the same
`FastMCPProxy`). Given a `StdioTransport` (keep_alive, FastMCP's default), the proxy keeps
one upstream process and opens a fresh client session to it per request (FastMCP's session
isolation); the backend mirrors the front connection's era. Logging is turned down to
warnings (no access log line per request).
"""

from __future__ import annotations

import sys

from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy


def main(argv: list[str]) -> None:
    if len(argv) < 4 or argv[0] != "--port" or argv[2] != "--":
        raise SystemExit("usage: fastmcp_proxy.py --port PORT -- PROGRAM ARGS...")
    port = int(argv[1])
    program, args = argv[3], argv[4:]
    proxy = create_proxy(StdioTransport(command=program, args=args), name="bench-proxy")
    # No log line per request (uvicorn's access log): ours writes none either.
    proxy.run(
        transport="http",
        host="127.0.0.1",
        port=port,
        path="/mcp",
        show_banner=False,
        log_level="WARNING",
        uvicorn_config={"access_log": False},
    )


if __name__ == "__main__":
    main(sys.argv[1:])
