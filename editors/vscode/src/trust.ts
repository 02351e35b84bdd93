/**
 * Folder trust: what the server says about a folder (`ndomo.trust.get`) → the one question
 * the user is asked, and what each answer does. Pure (no `vscode` import): `extension.ts`
 * binds it to VS Code's messages, commands and Restricted Mode.
 *
 * Until a folder is trusted the server ignores what it would configure (its
 * `.ndomo/config.yaml`, agents, reflexes, instruction files, MCP servers). The question is
 * asked once per folder: the answer is recorded by the server in the user's data directory,
 * so a restart does not ask again. In Restricted Mode the server runs the folder untrusted
 * whatever it recorded (`workspaceTrusted: false`), and the question offers to trust the
 * folder in VS Code and in ndomo together.
 */

export type TrustState = "trusted" | "untrusted" | "unknown";

export interface TrustInfo {
  root: string;
  state: TrustState;
  /** What trusting the folder would let it configure, in the server's words. */
  configures: string[];
}

const STATES = new Set<string>(["trusted", "untrusted", "unknown"]);

/** `ndomo.trust.get`'s answer, or null when it is not one. */
export function parseTrust(raw: unknown): TrustInfo | null {
  if (!raw || typeof raw !== "object") return null;
  const r = raw as Record<string, unknown>;
  if (typeof r.state !== "string" || !STATES.has(r.state)) return null;
  const configures = Array.isArray(r.configures) ? r.configures.filter((c): c is string => typeof c === "string") : [];
  return { root: typeof r.root === "string" ? r.root : "", state: r.state as TrustState, configures };
}

/** The answers, as button titles. */
export const TRUST = "Trust";
export const DONT_TRUST = "Don't trust";
/** In Restricted Mode: trust in VS Code (its Workspace Trust editor) and then in ndomo. */
export const TRUST_BOTH = "Trust in VS Code and ndomo…";

/** VS Code's own command that opens its Workspace Trust editor (stable since 1.57). */
export const MANAGE_TRUST_COMMAND = "workbench.trust.manage";

export interface Question {
  message: string;
  detail: string;
  buttons: string[];
}

function listed(configures: string[]): string {
  return configures.map((c) => `• ${c}`).join("\n");
}

/**
 * The question for one folder, or null when there is nothing to ask: the folder configures
 * nothing, or (outside Restricted Mode) the user already answered. In Restricted Mode the
 * server's state is "untrusted" whatever was recorded, so `declined` (the user said no in
 * this workspace) is what stops a second question.
 */
export function question(info: TrustInfo, restricted: boolean, declined = false): Question | null {
  if (info.configures.length === 0) return null;
  const name = info.root || "This folder";
  if (!restricted) {
    if (info.state !== "unknown") return null;
    return {
      message: `ndomo: trust ${name}? It would configure the agent that reads it.`,
      detail:
        `Trusting it lets it set:\n${listed(info.configures)}\n\n` +
        "Until you trust it, ndomo ignores all of these. Your answer is kept in your own data directory; " +
        "\"ndomo: Folder trust…\" (or ndomo trust / ndomo trust --revoke in a shell) changes it.",
      buttons: [TRUST, DONT_TRUST],
    };
  }
  if (declined) return null;
  return {
    message: `ndomo: ${name} is in VS Code's Restricted Mode, so ndomo runs it untrusted and ignores what it would configure.`,
    detail:
      `Trusting it lets it set:\n${listed(info.configures)}\n\n` +
      `"${TRUST_BOTH}" opens VS Code's Workspace Trust editor: choose "Trust" there and ndomo trusts the folder too ` +
      "(the server restarts with it). Nothing else asks you again.",
    buttons: [TRUST_BOTH, DONT_TRUST],
  };
}

/** The answer → what to do: record it with `ndomo.trust.set`, or ask VS Code first. */
export type Outcome = { kind: "set"; trusted: boolean } | { kind: "grantVsCode" } | { kind: "none" };

export function outcome(answer: string | undefined): Outcome {
  if (answer === TRUST) return { kind: "set", trusted: true };
  if (answer === DONT_TRUST) return { kind: "set", trusted: false };
  if (answer === TRUST_BOTH) return { kind: "grantVsCode" };
  return { kind: "none" }; // dismissed: nothing recorded, asked again at the next start
}

/** Status-bar word for a state that is not trusted (the status carries `trust`). */
export function untrustedWord(trust: unknown): string | null {
  return typeof trust === "string" && trust !== "trusted" ? "untrusted" : null;
}
