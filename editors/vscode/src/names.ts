/**
 * Mode and agent names come from the server, never from this extension: the `initialize`
 * result advertises them (`capabilities.experimental.ndomo`) and `ndomo.catalog` returns
 * them fresh (a new `.ndomo/agents/*.md` shows up without a restart). Every mode and agent
 * menu (status bar, palette, chat view) is built from a `Catalog`.
 */

export interface ModeEntry {
  name: string;
  description: string;
  default: boolean;
  /** What the mode is for ("plan", "research", "build"): commands pick a mode by purpose. */
  role?: string | null;
}

export interface AgentEntry {
  name: string;
  description: string;
  default: boolean;
  /** A session can be switched to it (sub-agents only run delegated tasks). */
  primary?: boolean;
  default_mode?: string | null;
  /** "planner", "builder" or null: commands pick an agent by purpose. */
  role?: string | null;
}

export interface Catalog {
  modes: ModeEntry[];
  agents: AgentEntry[];
}

export const EMPTY: Catalog = { modes: [], agents: [] };

function entries<T extends { name: string }>(raw: unknown): T[] {
  if (!Array.isArray(raw)) return [];
  return raw.filter((e): e is T => !!e && typeof e === "object" && typeof (e as { name?: unknown }).name === "string");
}

/** A catalog from the server's answer (or the initialize capability); null if it is not one. */
export function parseCatalog(raw: unknown): Catalog | null {
  if (!raw || typeof raw !== "object") return null;
  const r = raw as { modes?: unknown; agents?: unknown };
  if (!Array.isArray(r.modes) || !Array.isArray(r.agents)) return null;
  return { modes: entries<ModeEntry>(r.modes), agents: entries<AgentEntry>(r.agents) };
}

/** The agents a session can switch to, in the server's order. */
export function sessionAgents(cat: Catalog): AgentEntry[] {
  return cat.agents.filter((a) => a.primary !== false);
}

/**
 * (agent, mode) for a job named by purpose: the default agent if it has `agentRole`, else
 * the first session agent that has it; the first mode with `modeRole`, else that agent's
 * own default mode. The same rule as the server's code actions (ndomo.catalog.pick).
 */
export function pickByRole(cat: Catalog, agentRole: string, modeRole: string): { agent: string; mode: string } | null {
  const agents = sessionAgents(cat).filter((a) => a.role === agentRole);
  const agent = agents.find((a) => a.default) ?? agents[0];
  if (!agent) return null;
  const mode = cat.modes.find((m) => m.role === modeRole)?.name ?? agent.default_mode;
  return mode ? { agent: agent.name, mode } : null;
}
