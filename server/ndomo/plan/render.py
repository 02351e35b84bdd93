"""Compact text for plans and tasks: what a model needs to act, nothing more."""

from __future__ import annotations

from ndomo.store.models import Plan, PlanDetail, StatusChange, Task


def plan_line(p: Plan) -> str:
    by = f" · by {p.created_by_agent}" if p.created_by_agent else ""
    return f"{p.slug} [{p.status}] {p.title} (id {p.id}{by})"


def task_line(t: Task) -> str:
    bits = [f"#{t.id} {t.ord}. [{t.status}] {t.description}"]
    if t.agent:
        bits.append(f"→ {t.agent}")
    if t.files:
        bits.append(f"[{', '.join(t.files)}]")
    if t.dependencies:
        bits.append(f"after #{', #'.join(str(d) for d in t.dependencies)}")
    if t.error:
        bits.append(f"error: {t.error[:200]}")
    return " ".join(bits)


def task_detail(t: Task) -> str:
    out = [task_line(t)]
    if t.result:
        out.append(f"result: {t.result}")
    if t.result_artifact:
        out.append(f"full result kept in {t.result_artifact}")
    return "\n".join(out)


def plan_detail(p: PlanDetail) -> str:
    pr = p.progress
    out = [
        plan_line(p),
        f"progress: {pr.done}/{pr.total} done, {pr.running} running, {pr.failed} failed, "
        f"{pr.blocked} blocked, {pr.pending} pending",
    ]
    if p.tags:
        out.append("tags: " + ", ".join(p.tags))
    out.append("overview: " + p.overview.strip()[:1500])
    if p.approach:
        out.append("approach: " + p.approach.strip()[:1500])
    if p.files:
        out.append("files: " + ", ".join(f.file_path for f in p.files))
    out.append("tasks:" if p.tasks else "tasks: none")
    out += ["  " + task_line(t) for t in p.tasks]
    return "\n".join(out)


def plans_list(plans: list[Plan], empty: str = "no plans") -> str:
    return "\n".join(plan_line(p) for p in plans) if plans else empty


def status_change(c: StatusChange) -> str:
    out = [c.message or f"plan {c.slug}: {c.from_status} → {c.to_status}"]
    if c.blockers:
        out += ["blocker: " + b for b in c.blockers]
    if c.archive_path:
        out.append(f"archived to {c.archive_path}")
    return "\n".join(out)
