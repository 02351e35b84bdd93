/**
 * The conversation view's state, fed by the server: `ndomo/turn/event`, `ndomo/status`,
 * the session's stored history (`ndomo.session.open`) and approval requests. Pure (no
 * `vscode` import): the extension keeps one and the webview only draws it.
 */

import { filesOf, type FileDiff } from "./cards";

export type CallStatus = "running" | "done" | "failed" | "cancelled" | "refused";

export interface ToolCallView {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  status: CallStatus;
  summary: string;
  output: string; // live output (bash, serve), bounded
  /** A command's confinement as it ran ("sandboxed · offline", "not sandboxed"). */
  sandbox?: string | null;
  /** The files it changed, each with its diff (write, edit, apply_patch). */
  files?: FileDiff[];
}

export type Item =
  | { kind: "text"; text: string }
  | { kind: "tool"; call: ToolCallView }
  | { kind: "notice"; level: string; text: string }
  | { kind: "decision"; text: string }; // how an approval was decided ("approved once by you"), the server's words

/** What a code action's turn is about (its `turn_started` event's `selection`). */
export interface TurnSelection {
  path: string;
  start_line?: number | null;
  end_line?: number | null;
  text?: string | null;
}

export interface TurnView {
  id: number | null;
  prompt: string;
  selection?: TurnSelection | null;
  agent: string;
  mode: string;
  status: string; // running | done | failed | cancelled | blocked | capped | interrupted
  error: string | null;
  items: Item[];
}

/** The server's request for an approval with its parts apart (sent to a client announcing
 * `experimental.ndomo.approvals`). */
export const APPROVE = "ndomo/approve";

/** One answer of an `ndomo/approve` request; the first is the primary action. */
export interface ApprovalOption {
  id: string; // once | session | project | deny | never
  label: string;
  detail: string;
}

/** `ndomo/approve`'s params (the server's `ApproveParams`): an approval's parts, laid out here. */
export interface ApproveParams {
  message: string; // the short question, for a notification
  reason: string;
  permission: string;
  subject: string;
  agent: string;
  mode: string;
  rule: string;
  sandbox: string;
  network: boolean | null;
  destinations: string[];
  choices: ApprovalOption[];
}

export interface Approval {
  id: number;
  message: string;
  /** What the buttons answer: a plain question's titles, or a structured one's option ids. */
  choices: string[];
  /** An `ndomo/approve` request's parts (absent for a plain `window/showMessageRequest`). */
  parts?: ApproveParams;
}

export interface StatusInfo {
  session: string;
  mode: string;
  agent: string;
  busy: boolean;
  state: string;
  plan: { done: number; total: number; slug?: string } | null;
  /** The session's tokens (and cost with `model.price`), as `ndomo/status` reports them. */
  usage?: {
    session: { prompt: number; completion: number };
    cost: { session: number; currency: string } | null;
  } | null;
}

/** The empty session's welcome panel: what the agents and modes do, the model, the trust. */
export interface Welcome {
  agents: { name: string; description: string }[];
  modes: { name: string; description: string }[];
  model: string; // "provider name" from ndomo.health (not probed), "" when unknown
  trust: string; // trusted | untrusted | unknown | ""
  trustNote: string;
}

/** The send box's starters on an empty session (a click puts one in the box). */
export const EXAMPLE_PROMPTS = [
  "Explain how this project is organised and where to start reading.",
  "Find the function at my cursor's callers and tell me what would break if it changed.",
  "Add a test for the most recently changed function and run it.",
];

/** The welcome from the catalog and `ndomo.health {probe_model: false}` (either may be missing). */
export function welcomeFrom(
  cat: { agents: { name: string; description?: string }[]; modes: { name: string; description?: string }[] },
  health: any,
): Welcome {
  const line = (d?: string) => (d ?? "").trim().split("\n")[0] ?? "";
  const m = health && typeof health === "object" ? health.model : null;
  const t = health && typeof health === "object" ? health.trust : null;
  const model = m && typeof m.name === "string" && m.name ? `${m.name}${typeof m.provider === "string" && m.provider ? ` (${m.provider})` : ""}` : "";
  return {
    agents: cat.agents.map((a) => ({ name: a.name, description: line(a.description) })),
    modes: cat.modes.map((x) => ({ name: x.name, description: line(x.description) })),
    model,
    trust: t && typeof t.state === "string" ? t.state : "",
    trustNote: t && typeof t.note === "string" ? t.note : "",
  };
}

export interface ChatState {
  session: string | null;
  status: StatusInfo | null;
  turns: TurnView[];
  approvals: Approval[];
  agents: string[];
  modes: string[]; // both from the server's catalog (names.ts), never a list of our own
  more: number; // older turns not loaded
  welcome: Welcome | null; // shown while the session has no turn
}

/** What the send box says when a prompt waits for the running turn (its text is kept). */
export const BUSY_TEXT = "A turn is still running: wait for it to finish or press Stop, then send again. Your message is kept.";

export const OUTPUT_CAP = 20000; // characters of live tool output kept per call in the view

export function emptyState(): ChatState {
  return { session: null, status: null, turns: [], approvals: [], agents: [], modes: [], more: 0, welcome: null };
}

function turnFor(state: ChatState, id: number | null | undefined): TurnView | undefined {
  if (id === null || id === undefined) return state.turns.at(-1);
  for (let i = state.turns.length - 1; i >= 0; i--) if (state.turns[i].id === id) return state.turns[i];
  return undefined;
}

function findCall(state: ChatState, callId: string): ToolCallView | undefined {
  for (let i = state.turns.length - 1; i >= 0; i--) {
    for (const it of state.turns[i].items) if (it.kind === "tool" && it.call.id === callId) return it.call;
  }
  return undefined;
}

/** Apply one `ndomo/turn/event`. Events of sub-agent turns land in the latest top-level turn. */
export function applyEvent(state: ChatState, raw: unknown): void {
  if (!raw || typeof raw !== "object") return;
  const e = raw as Record<string, any>;
  switch (e.kind) {
    case "turn_started": {
      if (turnFor(state, e.turn_id) && e.turn_id !== null) return;
      const running = state.turns.at(-1);
      if (running && running.status === "running" && running.id !== null) {
        // a delegated sub-agent's turn: shown inside the running turn
        running.items.push({ kind: "notice", level: "info", text: `${e.agent} (${e.mode}): ${e.prompt}` });
        return;
      }
      state.turns.push({
        id: e.turn_id ?? null, prompt: String(e.prompt ?? ""), selection: selectionOf(e.selection),
        agent: e.agent, mode: e.mode, status: "running", error: null, items: [],
      });
      return;
    }
    case "text": {
      const t = turnFor(state, e.turn_id) ?? state.turns.at(-1);
      if (!t) return;
      const last = t.items.at(-1);
      if (last && last.kind === "text") last.text += String(e.text ?? "");
      else t.items.push({ kind: "text", text: String(e.text ?? "") });
      return;
    }
    case "tool_started": {
      const t = turnFor(state, e.turn_id) ?? state.turns.at(-1);
      if (!t) return;
      t.items.push({ kind: "tool", call: { id: e.call_id, name: e.name, arguments: e.arguments ?? {}, status: "running", summary: "", output: "" } });
      return;
    }
    case "tool_output": {
      const c = findCall(state, e.call_id);
      if (!c) return;
      c.output = (c.output + String(e.text ?? "")).slice(-OUTPUT_CAP);
      return;
    }
    case "tool_finished": {
      const c = findCall(state, e.call_id);
      if (!c) return;
      c.status = e.status;
      c.summary = String(e.summary ?? "");
      if (typeof e.sandbox === "string" && e.sandbox) c.sandbox = e.sandbox;
      const files = filesOf(e.files);
      if (files.length) c.files = files;
      return;
    }
    case "decision": {
      // an approval of a running call was decided (by the user, or sandbox.auto_allow)
      const t = turnFor(state, e.turn_id) ?? state.turns.at(-1);
      if (t && typeof e.text === "string") t.items.push({ kind: "decision", text: e.text });
      return;
    }
    case "notice": {
      const t = turnFor(state, e.turn_id) ?? state.turns.at(-1);
      if (t) t.items.push({ kind: "notice", level: e.level ?? "info", text: String(e.message ?? "") });
      return;
    }
    case "turn_finished": {
      const t = turnFor(state, e.turn_id);
      if (!t || t.status !== "running") return; // a sub-agent's end, or already final
      t.status = e.status;
      t.error = e.error ?? null;
      for (const it of t.items) if (it.kind === "tool" && it.call.status === "running") it.call.status = "cancelled";
      return;
    }
  }
}

function selectionOf(raw: any): TurnSelection | null {
  if (!raw || typeof raw !== "object" || typeof raw.path !== "string" || !raw.path) return null;
  const line = (v: unknown) => (typeof v === "number" && v > 0 ? v : null);
  return { path: raw.path, start_line: line(raw.start_line), end_line: line(raw.end_line), text: typeof raw.text === "string" ? raw.text : null };
}

/** A selection chip's words: `calc.py:2–3` and the first selected line that has text, cut. */
export function describeSelection(s: TurnSelection, width = 60): { place: string; text: string } {
  const from = s.start_line ?? null;
  const to = s.end_line ?? null;
  const place = from ? `${s.path}:${from}${to && to !== from ? `–${to}` : ""}` : s.path;
  const first = (s.text ?? "").split("\n").find((l) => l.trim()) ?? "";
  const trimmed = first.trim();
  const more = (s.text ?? "").trim().includes("\n") || trimmed.length > width;
  return { place, text: trimmed ? trimmed.slice(0, width) + (more ? "…" : "") : "" };
}

export function applyStatus(state: ChatState, status: StatusInfo): void {
  if (state.session && status.session !== state.session) {
    state.turns = []; // another session became current (a new session, session.open)
    state.more = 0;
  }
  state.session = status.session;
  state.status = status;
}

/** The `ndomo.session.open` result: the session's stored conversation. */
export function applyHistory(state: ChatState, view: any): void {
  if (!view || typeof view !== "object") return;
  state.session = view.session ?? state.session;
  if (view.status) state.status = view.status;
  state.more = Number(view.more ?? 0);
  state.turns = (view.turns ?? []).map((t: any) => ({
    id: t.id,
    prompt: t.prompt ?? "",
    selection: selectionOf(t.selection),
    agent: t.agent ?? "",
    mode: t.mode ?? "",
    status: t.status,
    error: t.error ?? null,
    items: (t.items ?? []).flatMap(storedItems),
  }));
}

/** A stored item as the live view had it: a call's card, then its decision line. */
function storedItems(i: any): Item[] {
  if (i.kind !== "tool") return [{ kind: "text", text: i.text ?? "" }];
  const call: ToolCallView = {
    id: i.call_id, name: i.name, arguments: i.arguments ?? {}, status: storedStatus(i), summary: firstLine(i.result ?? ""), output: i.result ?? "",
  };
  if (typeof i.sandbox === "string" && i.sandbox) call.sandbox = i.sandbox;
  const files = filesOf(i.files);
  if (files.length) call.files = files;
  const items: Item[] = [{ kind: "tool", call }];
  if (typeof i.decision === "string" && i.decision) items.push({ kind: "decision", text: i.decision });
  return items;
}

/** What a command's result says that no event did (a slash command's payload, a refusal). */
export function applyTurnResult(state: ChatState, prompt: string, result: any): void {
  if (!result || typeof result !== "object") return;
  if (result.turn_id === null || result.turn_id === undefined) {
    const text = result.error ? `${result.error}` : JSON.stringify(result.payload ?? result.status, null, 2);
    state.turns.push({
      id: null, prompt, agent: result.agent ?? "", mode: result.mode ?? "", status: result.status ?? "done",
      error: result.error ?? null, items: result.error ? [] : [{ kind: "text", text }],
    });
  }
}

const CALL_STATUSES = new Set<CallStatus>(["done", "failed", "cancelled", "refused"]);

/** A stored call's status as the server kept it; a call without one (stored before the server
 * kept it) is done when it has a result, else cancelled. */
function storedStatus(i: any): CallStatus {
  if (CALL_STATUSES.has(i.status)) return i.status;
  return i.result === null || i.result === undefined ? "cancelled" : "done";
}

/** A refusal that names the modes admitting the call, at the end of its first line: the fence's
 * "tool 'x' is not available in <mode> mode; switch to <mode> or <mode>", a mode's own
 * "… writes only design artifacts (…); a.py is not one — switch to <mode>". */
const SWITCH_TO = /\bswitch to ([\w.-]+(?:\s+or\s+[\w.-]+)*)\s*$/;

/** The mode a refused call's "Switch to … and retry" sets: the last mode the refusal names (the
 * server lists them in its catalog's order, the widest last); null for any other refusal (a
 * rule, the user). The view names no mode itself: they are the server's. */
export function fenceRetry(c: ToolCallView): string | null {
  if (c.status !== "refused") return null;
  for (const text of [c.summary, c.output]) {
    const m = SWITCH_TO.exec((text ?? "").trim().split("\n")[0] ?? "");
    if (!m) continue;
    const modes = m[1].split(/\s+or\s+/);
    return modes[modes.length - 1];
  }
  return null;
}

/** A tool call of the state by its id (the extension opens its file or its diff). */
export function callById(state: ChatState, id: string): ToolCallView | undefined {
  return findCall(state, id);
}

function firstLine(s: string): string {
  return (s.trim().split("\n")[0] ?? "").slice(0, 160);
}

let approvalSeq = 0;

export function addApproval(state: ChatState, message: string, choices: string[], parts?: ApproveParams): Approval {
  const a: Approval = parts ? { id: ++approvalSeq, message, choices, parts } : { id: ++approvalSeq, message, choices };
  state.approvals.push(a);
  return a;
}

export function removeApproval(state: ChatState, id: number): void {
  state.approvals = state.approvals.filter((a) => a.id !== id);
}

const QUIET = new Set(["", "idle", "done"]);

/** The header: agent · mode, the builder's scope state or last outcome when notable, plan progress. */
/** 7,512 → "7.5k", 75,310 → "75k": the header stays one short line. */
function short(n: number): string {
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e4) return `${Math.round(n / 1e3)}k`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
  return String(n);
}

export function describeStatus(s: StatusInfo | null): string {
  if (!s) return "ndomo: connecting…";
  const parts = [`${s.agent} · ${s.mode}`];
  if (s.busy) parts.push("working…");
  if (!QUIET.has(s.state ?? "")) parts.push(s.state);
  if (s.plan) parts.push(`plan ${s.plan.slug ? s.plan.slug + " " : ""}${s.plan.done}/${s.plan.total}`);
  const u = s.usage;
  if (u && u.session.prompt + u.session.completion > 0) {
    parts.push(`tokens ${short(u.session.prompt)}+${short(u.session.completion)}` + (u.cost ? ` ${u.cost.currency}${u.cost.session.toFixed(4)}` : ""));
  }
  return parts.join(" · ");
}

/** Plain words for a turn's end state. */
export function describeOutcome(t: TurnView): string {
  switch (t.status) {
    case "running":
      return "working…";
    case "done":
      return "done";
    case "blocked":
      return `handed back: ${t.error ?? "blocked"}`;
    case "capped":
      // the iteration cap, the output cap or a loop: the error says which
      return `stopped: ${t.error ?? "a cap was reached"}`;
    case "cancelled":
      return "cancelled";
    case "interrupted":
      return "interrupted (the server stopped)";
    default:
      return `failed${t.error ? `: ${t.error}` : ""}`;
  }
}
