"""Markdown archive of a finished plan: the record that survives the database."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from ndomo.store.models import PlanDetail

ARCHIVE_DIR = Path(".ndomo") / "archives" / "plans"

_BOX = {"done": "x", "failed": "!", "blocked": "~", "running": ">", "pending": " "}


def render(plan: PlanDetail) -> str:
    lines = [f"# {plan.title}", ""]
    lines += [
        f"- id: `{plan.id}`",
        f"- slug: `{plan.slug}`",
        f"- status: **{plan.status}**",
        f"- priority: {plan.priority}"
        + (f", complexity {plan.complexity}/5" if plan.complexity else ""),
    ]
    if plan.category:
        lines.append(f"- category: {plan.category}")
    lines.append(
        f"- created: {plan.created_at}"
        + (f" by {plan.created_by_agent}" if plan.created_by_agent else "")
    )
    if plan.executed_by_agent or plan.executed_by_session:
        lines.append(
            f"- executed by: {plan.executed_by_agent or '?'}"
            + (f" (session {plan.executed_by_session})" if plan.executed_by_session else "")
        )
    p = plan.progress
    lines.append(f"- progress: {p.done}/{p.total} done, {p.failed} failed, {p.blocked} blocked")
    lines += ["", "## Overview", "", plan.overview.strip(), ""]
    if plan.approach:
        lines += ["## Approach", "", plan.approach.strip(), ""]
    lines += ["## Tasks", ""]
    if not plan.tasks:
        lines.append("_(no tasks)_")
    for t in plan.tasks:
        agent = f" _(agent: {t.agent})_" if t.agent else ""
        lines.append(f"- [{_BOX.get(t.status, ' ')}] {t.ord}. {t.description}{agent} — {t.status}")
        if t.files:
            lines.append(f"  - files: {', '.join(t.files)}")
        if t.result:
            lines.append("  - result:")
            lines += ["    " + ln for ln in t.result.strip().splitlines()]
        if t.result_artifact:
            lines.append(f"  - full result: `{t.result_artifact}`")
        if t.error:
            lines.append("  - error:")
            lines += ["    " + ln for ln in t.error.strip().splitlines()]
    lines += ["", "## Files", ""]
    lines += [f"- `{f.file_path}`" + (f" ({f.role})" if f.role else "") for f in plan.files] or [
        "_(none)_"
    ]
    lines += ["", "## Tags", "", ", ".join(plan.tags) if plan.tags else "_(none)_", ""]
    lines += ["## Audit trail", ""]
    for a in plan.audit:
        forced = " **forced**" if a.forced else ""
        reason = f" — {a.reason}" if a.reason else ""
        lines.append(
            f"- {a.at} {a.actor or '?'}: {a.from_status or '∅'} → {a.to_status}{forced}{reason}"
        )
    if not plan.audit:
        lines.append("_(none)_")
    lines += ["", "## Original plan data", "", "```json"]
    if plan.original_plan_data:
        try:
            lines.append(
                json.dumps(json.loads(plan.original_plan_data), indent=2, ensure_ascii=False)
            )
        except ValueError:
            lines.append(plan.original_plan_data)
    else:
        lines.append("null")
    lines += ["```", ""]
    return "\n".join(lines)


def _write(target_dir: Path, stem: str, text: str, keep: Path | None) -> Path:
    target_dir.mkdir(parents=True, exist_ok=True)
    path = target_dir / f"{stem}.md"
    n = 2
    while path.exists() and path != keep:
        path = target_dir / f"{stem}-{n}.md"
        n += 1
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


async def write_archive(
    workspace: Path, slug: str, date: str, text: str, keep: Path | None = None
) -> Path:
    """Write `<slug>-<date>.md` (never clobbering another plan's file), off the event loop."""
    return await asyncio.to_thread(_write, workspace / ARCHIVE_DIR, f"{slug}-{date}", text, keep)


async def remove_file(path: Path) -> None:
    await asyncio.to_thread(path.unlink, True)
