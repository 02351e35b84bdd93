"""The plan's markdown view `.ndomo/plans/<slug>.md`: one checkbox line per task.

Pure (no editor code): rendering, parsing ticked boxes back, writing the file only when
its text changes, and the `plan.open` action that shows it through the session's host.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from pydantic import ConfigDict, Field

from ndomo.actions import ActionError, action
from ndomo.app import App
from ndomo.schema import Schema
from ndomo.security.paths import workspace_name
from ndomo.store.errors import StoreError
from ndomo.store.models import PlanDetail

VIEW_DIR = Path(".ndomo") / "plans"
# `- [x] 2. description [done] · files: a.py · #17` → (mark, task id)
_TASK_LINE = re.compile(r"^\s*[-*] \[(?P<mark>[ xX])\] .*#(?P<id>\d+)\s*$")


def view_path(root: Path, slug: str) -> Path:
    return root / VIEW_DIR / f"{slug}.md"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render(plan: PlanDetail) -> tuple[str, dict[int, int]]:
    """The view's text and, per task id, its 0-based line."""
    p = plan.progress
    lines = [
        f"# {plan.title}",
        "",
        f"plan `{plan.slug}` · {plan.status} · {p.done}/{p.total} done",
        "",
        "<!-- ndomo keeps this file current. Tick a box and save to mark the task done;"
        " untick it to reopen the task. -->",
        "",
    ]
    where: dict[int, int] = {}
    for t in plan.tasks:
        mark = "x" if t.status == "done" else " "
        files = f" · files: {', '.join(t.files)}" if t.files else ""
        where[t.id] = len(lines)
        lines.append(
            f"- [{mark}] {t.ord}. {_one_line(t.description)} [{t.status}]{files} · #{t.id}"
        )
    if not plan.tasks:
        lines.append("_no tasks yet_")
    return "\n".join(lines) + "\n", where


def task_lines(text: str) -> dict[int, tuple[int, bool]]:
    """Task id → (0-based line, ticked) for every task line of a (possibly edited) view."""
    out: dict[int, tuple[int, bool]] = {}
    for i, line in enumerate(text.splitlines()):
        m = _TASK_LINE.match(line)
        if m:
            out[int(m["id"])] = (i, m["mark"] in "xX")
    return out


def wanted_changes(plan: PlanDetail, text: str) -> list[tuple[int, str]]:
    """(task id, new status) for boxes the user ticked or unticked in `text`."""
    current = {t.id: t.status for t in plan.tasks}
    changes = []
    for tid, (_, ticked) in task_lines(text).items():
        status = current.get(tid)
        if status is None:
            continue
        if ticked and status != "done":
            changes.append((tid, "done"))
        elif not ticked and status == "done":
            changes.append((tid, "pending"))
    return changes


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return None


def _write_if_changed(path: Path, text: str) -> bool:
    if _read(path) == text:
        return False
    from ndomo.runtime.host import write_atomic

    write_atomic(path, text)
    return True


async def write_view(root: Path, plan: PlanDetail) -> tuple[Path, dict[int, int], bool]:
    """Write the view if its text changed; returns (path, task lines, written)."""
    text, where = render(plan)
    path = view_path(root, plan.slug)
    written = await asyncio.to_thread(_write_if_changed, path, text)
    return path, where, written


class PlanOpenParams(Schema):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    plan: str = Field(min_length=1, description="plan uuid or slug")


class PlanOpened(Schema):
    path: str
    shown: bool


@action(
    "plan.open",
    PlanOpenParams,
    summary="Open the plan's markdown view in the editor",
    surfaces=("lsp",),
)
async def plan_open(app: App, p: PlanOpenParams) -> PlanOpened:
    try:
        plan = await (await app.store()).get_plan(p.plan)
    except StoreError as exc:
        raise ActionError(exc.message, field="plan", kind=exc.kind) from None
    path, _, _ = await write_view(app.root, plan)
    shown = False
    if app.host_factory is not None:
        await app.host_factory().show_document(path)
        shown = True
    return PlanOpened(path=workspace_name(path, [app.root]), shown=shown)
