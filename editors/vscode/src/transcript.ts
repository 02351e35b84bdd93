/**
 * `ndomo/turn/event` → text for the transcript channel. Pure, so it is unit-tested.
 * Returns null for events that add nothing to read.
 */

export function describeEvent(raw: unknown): string | null {
  if (!raw || typeof raw !== "object") return null;
  const e = raw as Record<string, unknown>;
  switch (e.kind) {
    case "turn_started":
      return `\n▶ ${e.agent} · ${e.mode}: ${e.prompt}\n`;
    case "text":
      return typeof e.text === "string" ? e.text : null;
    case "tool_started":
      return `\n  ⚙ ${e.name}…\n`;
    case "tool_finished":
      return `  ${e.status === "done" ? "✓" : "✗"} ${e.name}: ${e.summary ?? e.status}\n`;
    case "plan_changed":
      return `  ☰ plan changed${e.plan_id ? ` (${e.plan_id})` : ""}\n`;
    case "notice":
      return `  [${e.level ?? "info"}] ${e.message}\n`;
    case "turn_finished":
      return `\n■ ${e.status}${e.error ? `: ${e.error}` : ""}\n`;
    default:
      return null;
  }
}
