/**
 * The palette commands and the LSP command each one issues, kept free of `vscode` so the
 * mapping is unit-tested. `extension.ts` binds these to the editor through `Ui` and `Lsp`.
 */

import { Catalog, EMPTY, ModeEntry, AgentEntry, parseCatalog, pickByRole, sessionAgents } from "./names";

export interface Position {
  line: number;
  character: number;
}
export interface Range {
  start: Position;
  end: Position;
}
export interface Selection {
  uri: string;
  range: Range;
  empty: boolean;
}

export interface PickItem {
  label: string;
  description?: string;
  detail?: string;
  /** What picking it does: one LSP command with its single object argument. */
  command: string;
  args: Record<string, unknown>;
}

/** The LSP side: `workspace/executeCommand` with one object argument. */
export interface Lsp {
  execute(command: string, args?: Record<string, unknown>): Promise<unknown>;
}

/** The editor side, injected so tests drive it with plain objects. */
export interface Ui {
  selection(): Selection | undefined;
  input(prompt: string, placeholder?: string): Promise<string | undefined>;
  pick(items: PickItem[], placeholder: string): Promise<PickItem | undefined>;
  info(message: string): void;
  error(message: string): void;
  /** Show a longer text (plans, health, a turn's answer). */
  show(title: string, body: string): void;
}

export interface Status {
  mode: string;
  agent: string;
}

export interface Context {
  lsp: Lsp;
  ui: Ui;
  /** The last `ndomo/status` seen (for the current mode/agent in picks). */
  status(): Status | null;
  /** The modes and agents the server advertised at initialize (`experimental.ndomo`). */
  advertised?(): unknown;
}

/** Prompts that go with a selection; the same wording as the server's code actions. */
export const FIX_PROMPT = "Fix the problems in the selected code.";
export const PLAN_PROMPT = "Plan the change to the selected code as an atomic plan.";

export function modePickItems(modes: ModeEntry[], current?: string): PickItem[] {
  return modes.map((m) => ({
    label: m.name === current ? `$(check) ${m.name}` : m.name,
    description: m.description,
    command: "ndomo.mode.set",
    args: { mode: m.name },
  }));
}

export function agentPickItems(agents: AgentEntry[], current?: string): PickItem[] {
  return agents.map((a) => ({
    label: a.name === current ? `$(check) ${a.name}` : a.name,
    description: a.description,
    command: "ndomo.agent.set",
    args: { agent: a.name },
  }));
}

/** One menu for the status-bar click: modes first, then the agents a session can switch to. */
export function statusMenuItems(cat: Catalog, status: Status | null): PickItem[] {
  const modes = modePickItems(cat.modes, status?.mode).map((i) => ({ ...i, description: `mode — ${i.description}` }));
  const agents = agentPickItems(sessionAgents(cat), status?.agent).map((i) => ({ ...i, description: `agent — ${i.description}` }));
  return [...modes, ...agents];
}

/**
 * The modes and agents, fresh from `ndomo.catalog` (a new agent file shows up at once),
 * else what the server advertised at initialize; never a list of our own.
 */
export async function catalog(ctx: Pick<Context, "lsp" | "advertised">): Promise<Catalog> {
  try {
    const fresh = parseCatalog(await ctx.lsp.execute("ndomo.catalog", {}));
    if (fresh) return fresh;
  } catch {
    // not started yet, or busy: the initialize result's lists
  }
  return parseCatalog(ctx.advertised?.()) ?? EMPTY;
}

/** (agent, mode) for a job by purpose, or an error that says which agent file is missing. */
async function byRole(ctx: Context, agentRole: string, modeRole: string): Promise<{ agent: string; mode: string } | null> {
  const picked = pickByRole(await catalog(ctx), agentRole, modeRole);
  if (!picked) ctx.ui.error(`ndomo: no ${agentRole} agent (see ndomo: Switch agent; agents are .ndomo/agents/*.md files)`);
  return picked;
}

function selectionArgs(sel: Selection | undefined): Record<string, unknown> {
  return sel ? { uri: sel.uri, range: sel.range } : {};
}

async function runPick(ctx: Context, items: PickItem[], placeholder: string): Promise<unknown> {
  const item = await ctx.ui.pick(items, placeholder);
  if (!item) return undefined;
  return ctx.lsp.execute(item.command, item.args);
}

function answerOf(result: unknown): string {
  const r = result as { answer?: unknown; status?: unknown; error?: unknown } | null;
  if (!r || typeof r !== "object") return "";
  if (typeof r.error === "string" && r.error) return `ndomo: ${r.error}`;
  return typeof r.answer === "string" ? r.answer : "";
}

async function turn(ctx: Context, args: Record<string, unknown>): Promise<unknown> {
  const result = await ctx.lsp.execute("ndomo.turn", args);
  const answer = answerOf(result);
  if (answer) ctx.ui.show("ndomo", answer);
  return result;
}

export interface PaletteCommand {
  /** VS Code command id (contributes.commands in package.json). */
  id: string;
  title: string;
  /** The LSP command it ends in (documentation and tests). */
  lsp: string;
  run(ctx: Context): Promise<unknown>;
}

export const PALETTE: PaletteCommand[] = [
  {
    id: "ndomo.ask",
    title: "Ask…",
    lsp: "ndomo.turn",
    async run(ctx) {
      const prompt = await ctx.ui.input("Ask ndomo", "What do you want to know or do?");
      if (!prompt || !prompt.trim()) return undefined;
      const sel = ctx.ui.selection();
      return turn(ctx, { prompt: prompt.trim(), ...(sel && !sel.empty ? selectionArgs(sel) : {}) });
    },
  },
  {
    id: "ndomo.fixSelection",
    title: "Fix selection with the builder agent",
    lsp: "ndomo.turn",
    async run(ctx) {
      const sel = ctx.ui.selection();
      if (!sel) {
        ctx.ui.error("ndomo: open a file and select the code to fix");
        return undefined;
      }
      const who = await byRole(ctx, "builder", "build");
      if (!who) return undefined;
      return turn(ctx, { prompt: FIX_PROMPT, ...selectionArgs(sel), ...who });
    },
  },
  {
    id: "ndomo.planWithForeman",
    title: "Plan with the planner agent",
    lsp: "ndomo.turn",
    async run(ctx) {
      const sel = ctx.ui.selection();
      const who = await byRole(ctx, "planner", "plan");
      if (!who) return undefined;
      const what = await ctx.ui.input(`Plan with ${who.agent}`, "What should change? (empty: the selection)");
      if (what === undefined) return undefined;
      const prompt = what.trim() || PLAN_PROMPT;
      if (!what.trim() && (!sel || sel.empty)) {
        ctx.ui.error("ndomo: say what to plan, or select the code to change");
        return undefined;
      }
      return turn(ctx, { prompt, ...(sel && !sel.empty ? selectionArgs(sel) : {}), ...who });
    },
  },
  {
    id: "ndomo.switchMode",
    title: "Switch mode",
    lsp: "ndomo.mode.set",
    run: async (ctx) => runPick(ctx, modePickItems((await catalog(ctx)).modes, ctx.status()?.mode), "ndomo: switch mode"),
  },
  {
    id: "ndomo.switchAgent",
    title: "Switch agent",
    lsp: "ndomo.agent.set",
    async run(ctx) {
      const agents = sessionAgents(await catalog(ctx));
      return runPick(ctx, agentPickItems(agents, ctx.status()?.agent), "ndomo: switch agent");
    },
  },
  {
    id: "ndomo.statusMenu",
    title: "Switch mode or agent",
    lsp: "ndomo.mode.set",
    async run(ctx) {
      return runPick(ctx, statusMenuItems(await catalog(ctx), ctx.status()), "ndomo: switch mode or agent");
    },
  },
  {
    id: "ndomo.cancelTurn",
    title: "Cancel turn",
    lsp: "ndomo.cancel",
    async run(ctx) {
      const res = (await ctx.lsp.execute("ndomo.cancel", {})) as { cancelled?: boolean } | null;
      ctx.ui.info(res?.cancelled ? "ndomo: turn cancelled" : "ndomo: no turn is running");
      return res;
    },
  },
  {
    id: "ndomo.undoTurn",
    title: "Undo last turn",
    lsp: "ndomo.undo",
    async run(ctx) {
      const res = await ctx.lsp.execute("ndomo.undo", {});
      ctx.ui.info(`ndomo: ${describe(res, "last turn undone")}`);
      return res;
    },
  },
  {
    id: "ndomo.rewindSession",
    title: "Rewind to before a prompt",
    lsp: "ndomo.session.rewind",
    run: rewind,
  },
  {
    id: "ndomo.showPlans",
    title: "Show plans",
    lsp: "ndomo.plan.list",
    async run(ctx) {
      const res = await ctx.lsp.execute("ndomo.plan.list", {});
      ctx.ui.show("ndomo plans", formatPlans(res));
      return res;
    },
  },
  {
    id: "ndomo.newSession",
    title: "New session",
    lsp: "ndomo.session.new",
    async run(ctx) {
      const res = await ctx.lsp.execute("ndomo.session.new", {});
      ctx.ui.info("ndomo: new session started");
      return res;
    },
  },
  {
    id: "ndomo.showHealth",
    title: "Health",
    lsp: "ndomo.health",
    async run(ctx) {
      const res = await ctx.lsp.execute("ndomo.health", {});
      ctx.ui.show("ndomo health", JSON.stringify(res, null, 2));
      return res;
    },
  },
  {
    id: "ndomo.notes",
    title: "Notes (list, delete)",
    lsp: "ndomo.memory.delete",
    async run(ctx) {
      const notes = ((await ctx.lsp.execute("ndomo.memory.list", {})) ?? []) as { id: number; category: string; content: string }[];
      if (!notes.length) {
        ctx.ui.info("ndomo: no notes yet");
        return undefined;
      }
      const items = notes.map((n) => ({
        label: `#${n.id} [${n.category}]`, detail: n.content, command: "ndomo.memory.delete", args: { id: n.id },
      }));
      return runPick(ctx, items, "Pick a note to delete (Esc keeps them all)");
    },
  },
];

const RECORDS = new Set(["rewind", "undo", "review"]); // ndomo's own file operations, not prompts

/** The session's prompts from `ndomo.session.open`, oldest first: one rewind target each. */
export function rewindItems(view: unknown): PickItem[] {
  const turns = (view as { turns?: unknown })?.turns;
  if (!Array.isArray(turns)) return [];
  const items: PickItem[] = [];
  for (const t of turns as { id?: unknown; prompt?: unknown; agent?: unknown; started_at?: unknown }[]) {
    if (typeof t.id !== "number" || RECORDS.has(String(t.agent))) continue;
    const first = (typeof t.prompt === "string" ? t.prompt : "").split("\n")[0];
    items.push({
      label: `${items.length + 1}. ${first.length > 80 ? first.slice(0, 77) + "..." : first}`,
      description: typeof t.agent === "string" ? t.agent : undefined,
      command: "ndomo.session.rewind",
      args: { turn: t.id },
    });
  }
  return items;
}

export const REWIND_WHAT: [string, string][] = [
  ["both", "Files and conversation"],
  ["code", "Files only (the conversation stays)"],
  ["conversation", "Conversation only (the files stay)"],
];

/** Back to before a prompt (or `turn`): what goes back is asked; a file both the user and a
 * later turn changed is named, and overwriting it is asked before `force`. */
export async function rewind(ctx: Context, turn?: number): Promise<unknown> {
  if (turn === undefined) {
    const items = rewindItems(await ctx.lsp.execute("ndomo.session.open", { limit: 200 }));
    if (items.length === 0) {
      ctx.ui.info("ndomo: this session has no prompt to rewind to");
      return undefined;
    }
    const picked = await ctx.ui.pick(items, "ndomo: rewind to before which prompt?");
    if (!picked) return undefined;
    turn = picked.args.turn as number;
  }
  const whats = REWIND_WHAT.map(([what, label]) => ({ label, command: "ndomo.session.rewind", args: { turn, what } }));
  const what = await ctx.ui.pick(whats, "ndomo: rewind what?");
  if (!what) return undefined;
  try {
    const res = await ctx.lsp.execute("ndomo.session.rewind", what.args);
    ctx.ui.info(`ndomo: ${describe(res, "rewound")}`);
    return res;
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    if (!msg.includes("force overwrites")) {
      ctx.ui.error(`ndomo: ${msg}`);
      return undefined;
    }
    const force = await ctx.ui.pick(
      [
        { label: "Overwrite them", command: "ndomo.session.rewind", args: { ...what.args, force: true } },
        { label: "Keep my changes", command: "", args: {} },
      ],
      `ndomo: ${msg}`,
    );
    if (!force || !force.command) return undefined;
    const res = await ctx.lsp.execute(force.command, force.args);
    ctx.ui.info(`ndomo: ${describe(res, "rewound")}`);
    return res;
  }
}

function describe(res: unknown, fallback: string): string {
  if (typeof res === "string") return res;
  const r = res as { message?: unknown; restored?: unknown; files?: unknown } | null;
  if (r && typeof r.message === "string") return r.message;
  const files = (r?.restored ?? r?.files) as unknown;
  if (Array.isArray(files)) return `${fallback} (${files.length} file${files.length === 1 ? "" : "s"} restored)`;
  return fallback;
}

/** Plain-text table of `ndomo.plan.list` (a list, or {plans: [...]}). */
export function formatPlans(res: unknown): string {
  const raw = Array.isArray(res) ? res : (res as { plans?: unknown })?.plans;
  if (!Array.isArray(raw) || raw.length === 0) return "No plans yet.";
  return raw
    .map((p) => {
      const plan = (p as { plan?: unknown }).plan ?? p;
      const r = plan as Record<string, unknown>;
      const prog = (p as { progress?: { done?: number; total?: number } }).progress;
      const count = prog && typeof prog.total === "number" ? ` ${prog.done ?? 0}/${prog.total}` : "";
      return `${r.status ?? ""}\t${r.slug ?? r.id}${count}\t${r.title ?? ""}`.trim();
    })
    .join("\n");
}

export function findCommand(id: string): PaletteCommand | undefined {
  return PALETTE.find((c) => c.id === id);
}
