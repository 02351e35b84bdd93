"""Runtime fixtures for the agent features: the fake model, a real store, test-only tools."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ndomo import compose
from ndomo.runtime.edits import change_file
from ndomo.runtime.runtime import Runtime
from ndomo.runtime.tools import FileChange, ToolError, tool


class PutParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    content: str | None = None  # None deletes


async def put_changes(ctx, p: PutParams) -> list[FileChange]:
    before = await ctx.host.read_text(ctx.app.root / p.path)
    kind = "create" if before is None else ("delete" if p.content is None else "modify")
    return [FileChange(p.path, kind, before, p.content)]


@tool(
    "put",
    PutParams,
    description="write a whole file (test tool)",
    risk="write",
    permission="edit",
    changes=put_changes,
)
async def put(ctx, p: PutParams):
    outcome = await change_file(ctx, ctx.app.root / p.path, p.content)
    if not outcome.applied:
        raise ToolError(outcome.reason)
    return f"wrote {p.path}"


class PeekParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str


@tool("peek", PeekParams, description="read a file (test tool)", read_paths=lambda p: [p.path])
async def peek(ctx, p: PeekParams):
    return await ctx.host.read_text(ctx.app.root / p.path) or "(absent)"


def runtime_with(app, *extra, plan_tools=True):
    plugins = compose.plugins()
    for t in extra:
        plugins.tools.add(t)
    if plan_tools and plugins.tools.get("plan_create") is None:
        from ndomo.plan import setup as plans_setup

        plans_setup(plugins)
    return Runtime(app, plugins)


def watch(rt) -> list[str]:
    """Every `ndomo/status` state the runtime publishes, in order."""
    seen: list[str] = []

    async def listener(status):
        seen.append(status.state)

    rt.status_listeners.add(listener)
    return seen


def call(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def tool_messages(request):
    return [m for m in request["body"]["messages"] if m["role"] == "tool"]


def offered(request):
    return {t["function"]["name"] for t in request["body"].get("tools", [])}


def write_agent(root, name, frontmatter: str, body: str = "Do the job.") -> None:
    folder = root / ".ndomo" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(
        f"---\n{frontmatter.strip()}\n---\n{body}\n", encoding="utf-8"
    )
