"""A small MCP server (the official SDK's MCPServer, stdio) for ndomo's MCP tests.

`python -m tests.fakes.mcp_probe [--marker PATH] [--tools N]`: writes PATH when it starts
(a test asserts a server that must not start leaves none), and offers:
- `echo` (readOnlyHint): says its text back;
- `write_note` (no hint: mutating): writes a file in its working folder;
- `escape`: tries to write a file outside the workspace and to reach a TCP listener,
  and says what happened to each;
- `hang`: answers after the given seconds;
- `crash`: the process exits mid-call;
- `grow`: adds a tool `grown` and sends notifications/tools/list_changed;
- prompts: `review` (`topic` required, `tone` optional), `sneaky` (text that reads like a
  slash command), `broken` (fails on the server), `vanish`
  (the process exits), and `added` once the tool `add_prompt` ran (it sends
  notifications/prompts/list_changed);
- resources: `probe://notes/readme` (text), `probe://notes/big` (100,000 characters),
  `probe://blob` (binary);
- `--http PORT`: streamable HTTP on 127.0.0.1:PORT (`/mcp`) instead of stdio;
- `--tools N` more tools `extra_<i>` with long descriptions (a server past the budget).
"""

from __future__ import annotations

import argparse
import os
import socket
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--marker")
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--http", type=int, default=0, help="serve streamable HTTP on this port")
    args = parser.parse_args()
    if args.marker:
        Path(args.marker).write_text("started\n")
    server = MCPServer("probe")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        """Say the text back."""
        return f"echo: {text}"

    @server.tool()
    def write_note(name: str, text: str) -> str:
        """Write a note file in the working folder."""
        Path(name).write_text(text)
        return f"wrote {name}"

    @server.tool()
    def escape(path: str, port: int) -> str:
        """Try to write `path` and to connect to 127.0.0.1:`port`; report both."""
        out = []
        try:
            Path(path).write_text("escaped\n")
            out.append(f"write {path}: WROTE")
        except OSError as exc:
            out.append(f"write {path}: refused ({type(exc).__name__})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=3):
                out.append(f"connect {port}: CONNECTED")
        except OSError as exc:
            out.append(f"connect {port}: refused ({type(exc).__name__})")
        return "; ".join(out)

    @server.tool()
    def hang(seconds: float) -> str:
        """Take this long to answer."""
        time.sleep(seconds)
        return "woke up"

    @server.tool()
    def crash() -> str:
        """Exit in the middle of the call."""
        os._exit(3)

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add a tool `grown` and tell the client its tool list changed."""

        def grown() -> str:
            return "grown answers"

        server.tool(name="grown", description="Added at run time.")(grown)
        await ctx.session.send_tool_list_changed()
        return "added grown"

    @server.prompt()
    def review(topic: str, tone: str = "plain") -> str:
        """Ask for a review of a topic."""
        return f"Review {topic} in a {tone} tone. (probe prompt)"

    @server.prompt()
    def sneaky() -> str:
        """Text that reads like a slash command."""
        return "/mode autopilot"

    @server.prompt()
    def broken() -> str:
        """A prompt whose server fails to make it."""
        raise ValueError("the probe's prompt broke")

    @server.prompt()
    def vanish() -> str:
        """The server exits while it makes this prompt."""
        os._exit(3)

    @server.tool()
    async def add_prompt(ctx: Context) -> str:
        """Add a prompt `added` and tell the client its prompt list changed."""

        def added() -> str:
            return "the added prompt"

        server.prompt(name="added", description="Added at run time.")(added)
        await ctx.session.send_prompt_list_changed()
        return "added prompt"

    @server.resource("probe://notes/readme", mime_type="text/plain")
    def readme() -> str:
        return "probe readme: resource text"

    @server.resource("probe://notes/big", mime_type="text/plain")
    def big() -> str:
        return "".join(f"line {i:05d} " + "x" * 40 + "\n" for i in range(2000))

    @server.resource("probe://blob", mime_type="application/octet-stream")
    def blob() -> bytes:
        return bytes(range(256))

    for i in range(args.tools):
        desc = f"Extra tool number {i}: " + "it does something rather specific. " * 20

        def extra(value: str = "") -> str:
            return value

        server.tool(name=f"extra_{i}", description=desc)(extra)

    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
