"""A Python SDK client for the gateway's tests: connects over Streamable HTTP with a bearer
token, lists the tools, makes the calls given, and prints one JSON line per step.

Usage: sdk_client.py URL TOKEN CALLS_JSON   (CALLS_JSON: [["tool", {arguments}], ...])
Every wait is bounded: the HTTP client's timeout and an overall 30 s limit.
"""

import asyncio
import json
import sys

import httpx2
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, token: str, calls: list) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=20) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                print(json.dumps({"tools": sorted(tool.name for tool in listed.tools)}))
                for name, arguments in calls:
                    try:
                        result = await session.call_tool(name, arguments)
                        texts = [block.text for block in result.content if hasattr(block, "text")]
                        print(json.dumps({"call": name, "isError": bool(result.is_error), "text": texts}))
                    except MCPError as error:
                        print(json.dumps({"call": name, "code": error.error.code, "message": error.error.message}))


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])), 30))
