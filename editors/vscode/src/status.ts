/**
 * Status-bar text from the server's `ndomo/status` notification.
 * Pure (no `vscode` import) so the format is unit-tested without an editor.
 */

import { untrustedWord } from "./trust";

export interface PlanProgress {
  id: string;
  slug?: string;
  done: number;
  total: number;
}

/** Prompt and completion tokens. */
export interface Tokens {
  prompt: number;
  completion: number;
}

/** `usage` of `ndomo/status`: the last turn's and the session's tokens, the cost with `model.price`. */
export interface Usage {
  turn: Tokens | null;
  session: Tokens;
  cost: { turn: number | null; session: number; currency: string } | null;
}

/** The `ndomo/status` payload (public interface of the server). */
export interface StatusPayload {
  session: string;
  mode: string;
  agent: string;
  busy: boolean;
  state: string;
  plan: PlanProgress | null;
  /** The workspace folder (uri) this status is of: the server has one session per folder. */
  folder?: string;
  /** The folder's trust ("trusted" | "untrusted" | "unknown"); absent from older servers. */
  trust?: string;
  usage?: Usage | null;
  /** `sandbox.auto_allow` is on: sandboxed, offline commands run without asking. */
  autoAllow?: boolean;
}

export interface StatusView {
  text: string;
  tooltip: string;
}

export const SPINNER = "$(sync~spin)";

/** States that say nothing worth a place in the status bar. */
const QUIET_STATES = new Set(["", "idle", "done", "answered", "none"]);

/** The agent and mode of a turn that is running now (may differ from the session's). */
export interface TurnView {
  agent: string;
  mode: string;
}

export function formatStatus(status: StatusPayload | null | undefined, connected = true, turn?: TurnView | null): StatusView {
  if (!connected) {
    return { text: "ndomo: $(debug-disconnect) stopped", tooltip: "ndomo: the language server is not running" };
  }
  if (!status) {
    return { text: "ndomo: $(loading~spin) starting", tooltip: "ndomo: waiting for the server" };
  }
  const shown = turn ?? status;
  const parts = [`ndomo: ${shown.agent} · ${shown.mode}`];
  const state = (status.state || "").trim();
  if (state && !QUIET_STATES.has(state)) parts.push(state);
  if (status.plan && status.plan.total > 0) parts.push(`${status.plan.done}/${status.plan.total}`);
  const untrusted = untrustedWord(status.trust);
  if (untrusted) parts.push(untrusted);
  if (status.autoAllow) parts.push("auto-allow");
  const text = (status.busy || turn ? `${SPINNER} ` : "") + parts.join(" · ");

  const lines = [
    `Agent: ${status.agent}`,
    `Mode: ${status.mode}`,
    ...(turn ? [`Running turn: ${turn.agent} · ${turn.mode}`] : []),
    `Session: ${status.session}`,
    `State: ${state || "idle"}${status.busy || turn ? " (turn running)" : ""}`,
  ];
  if (status.plan) {
    const name = status.plan.slug || status.plan.id;
    lines.push(`Plan: ${name} — ${status.plan.done}/${status.plan.total} tasks done`);
  }
  if (untrusted) {
    lines.push(`Folder trust: ${status.trust} — its .ndomo/ settings and agents are ignored ("ndomo: Folder trust…")`);
  }
  if (status.autoAllow) {
    lines.push("Auto-allow (sandbox.auto_allow): commands the agent would ask about run without asking when sandboxed and offline");
  }
  lines.push(...usageLines(status.usage));
  lines.push("Click to switch mode or agent");
  return { text, tooltip: lines.join("\n") };
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}

/** The tooltip's usage lines: tokens of the last turn and the session, and the cost. */
export function usageLines(usage: Usage | null | undefined): string[] {
  if (!usage) return [];
  const out = [];
  if (usage.turn) out.push(`Last turn: ${count(usage.turn.prompt)} prompt + ${count(usage.turn.completion)} completion tokens`);
  out.push(`Session: ${count(usage.session.prompt)} prompt + ${count(usage.session.completion)} completion tokens`);
  if (usage.cost) {
    const c = usage.cost;
    const turn = c.turn === null ? "" : `last turn ${c.currency}${c.turn.toFixed(4)}, `;
    out.push(`Cost: ${turn}session ${c.currency}${c.session.toFixed(4)}`);
  }
  return out;
}

function tokens(raw: unknown): Tokens | null {
  if (!raw || typeof raw !== "object") return null;
  const r = raw as Record<string, unknown>;
  const prompt = Number(r.prompt);
  const completion = Number(r.completion);
  return Number.isFinite(prompt) && Number.isFinite(completion) ? { prompt, completion } : null;
}

function parseUsage(raw: unknown): Usage | null {
  if (!raw || typeof raw !== "object") return null;
  const r = raw as Record<string, unknown>;
  const session = tokens(r.session);
  if (!session) return null;
  let cost: Usage["cost"] = null;
  if (r.cost && typeof r.cost === "object") {
    const c = r.cost as Record<string, unknown>;
    const total = Number(c.session);
    if (Number.isFinite(total)) {
      const turn = c.turn === null || c.turn === undefined ? null : Number(c.turn);
      cost = {
        turn: turn !== null && Number.isFinite(turn) ? turn : null,
        session: total,
        currency: typeof c.currency === "string" ? c.currency : "$",
      };
    }
  }
  return { turn: tokens(r.turn), session, cost };
}

/** Parse an untrusted notification payload; `null` when it is not a status. */
export function parseStatus(raw: unknown): StatusPayload | null {
  if (!raw || typeof raw !== "object") return null;
  const r = raw as Record<string, unknown>;
  if (typeof r.mode !== "string" || typeof r.agent !== "string") return null;
  let plan: PlanProgress | null = null;
  if (r.plan && typeof r.plan === "object") {
    const p = r.plan as Record<string, unknown>;
    const done = Number(p.done);
    const total = Number(p.total);
    if (Number.isFinite(done) && Number.isFinite(total)) {
      plan = { id: String(p.id ?? ""), slug: typeof p.slug === "string" ? p.slug : undefined, done, total };
    }
  }
  return {
    session: typeof r.session === "string" ? r.session : "",
    mode: r.mode,
    agent: r.agent,
    busy: r.busy === true,
    state: typeof r.state === "string" ? r.state : "",
    plan,
    ...(typeof r.folder === "string" ? { folder: r.folder } : {}),
    ...(typeof r.trust === "string" ? { trust: r.trust } : {}),
    usage: parseUsage(r.usage),
    ...(r.auto_allow === true ? { autoAllow: true } : {}),
  };
}

/**
 * The status to show: the one of the folder holding the active document (the innermost,
 * for nested folders), else the one received last. `received` is in arrival order.
 */
export function pickStatus(received: StatusPayload[], activeUri?: string): StatusPayload | null {
  if (received.length === 0) return null;
  let best: StatusPayload | undefined;
  if (activeUri) {
    for (const s of received) {
      const f = s.folder?.replace(/\/+$/, "");
      if (f && (activeUri === f || activeUri.startsWith(f + "/")) && (!best || f.length > (best.folder ?? "").length)) best = s;
    }
  }
  return best ?? received[received.length - 1];
}
