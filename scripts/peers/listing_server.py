"""An MCP server over stdio that serves a listing from a JSON file as it is.

    python listing_server.py FILE CASE_ID

FILE is one of bench/scan-corpus/attacks/*.json; the server serves the `server` object of
the case with id CASE_ID: its tools, prompts, resources, resource templates, instructions
and serverInfo, byte for byte as written, so that `switchboard scan` sees exactly what a
hostile server would show. It speaks the 2025-11-25 revision (a 2026-07-28 probe such as
`server/discover` gets -32601, and the client falls back), answers `ping`, and exits when
stdin closes. Only the standard library is used.
"""

from __future__ import annotations

import json
import sys

LISTS = {
    "tools/list": ("tools", "tools"),
    "prompts/list": ("prompts", "prompts"),
    "resources/list": ("resources", "resources"),
    "resources/templates/list": ("resourceTemplates", "resources"),
}


def load(path: str, case_id: str) -> dict:
    with open(path, encoding="utf-8") as file:
        corpus = json.load(file)
    for case in corpus["cases"]:
        if case["id"] == case_id:
            return case["server"]
    raise SystemExit(f"listing_server: no case `{case_id}` in {path}")


def capabilities(server: dict) -> dict:
    # Tools are always offered (an empty list when the case has none), as by nearly every
    # server: a case that hides its order in a prompt or a resource is still a server scan
    # lists.
    declared = {"tools": {}}
    for key, capability in LISTS.values():
        if key in server:
            declared[capability] = {}
    return declared


def answer(server: dict, message: dict) -> dict:
    method = message.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities(server),
            "serverInfo": server.get("serverInfo", {"name": "corpus-case", "version": "1.0.0"}),
        }
        if "instructions" in server:
            result["instructions"] = server["instructions"]
        return {"result": result}
    if method == "ping":
        return {"result": {}}
    if method in LISTS:
        key, _ = LISTS[method]
        return {"result": {key: server.get(key, [])}}
    return {"error": {"code": -32601, "message": f"method not found: {method}"}}


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit("usage: listing_server.py FILE CASE_ID")
    server = load(sys.argv[1], sys.argv[2])
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue
        reply = {"jsonrpc": "2.0", "id": message["id"], **answer(server, message)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
