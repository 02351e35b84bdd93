/**
 * Workspace settings → the server's initializationOptions (the `.ndomo/config.yaml` shape)
 * and the server command line. Pure: `get` and the file system are injected (VS Code's
 * configuration in the extension, a plain map in tests).
 */

export type Get = <T>(key: string) => T | undefined;

/** Where the command came from: says which setting to change when it fails. */
export type CommandOrigin = "setting" | "workspace venv" | "PATH";

export interface ServerCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  origin: CommandOrigin;
}

/** What the command lookup may see: the first workspace folder and whether it is trusted. */
export interface Where {
  folder?: string;
  trusted: boolean;
  /** true when `path` is an executable file */
  executable(path: string): boolean;
  windows?: boolean;
  home?: string;
}

export const DEFAULT_COMMAND = "ndomo";
export const COMMAND_SETTING = "ndomo.server.command";

/** A workspace's own virtualenvs, looked in (trusted workspaces only) before PATH. */
export function venvCandidates(folder: string, windows = false): string[] {
  const sep = windows ? "\\" : "/";
  const bin = windows ? ["Scripts", "ndomo.exe"] : ["bin", "ndomo"];
  return [".venv", "venv"].map((v) => [folder.replace(/[\\/]+$/, ""), v, ...bin].join(sep));
}

/** `${workspaceFolder}` and `${userHome}` as in VS Code's own settings; others stay as written. */
export function expandVars(value: string, where: Pick<Where, "folder" | "home">): string {
  return value.replace(/\$\{(workspaceFolder|userHome)\}/g, (whole, name: string) => {
    const v = name === "workspaceFolder" ? where.folder : where.home;
    return v ?? whole;
  });
}

/** Flat extension settings and where each goes in the config shape. */
export const SETTING_PATHS: Record<string, string[]> = {
  "model.provider": ["model", "provider"],
  "model.baseUrl": ["model", "base_url"],
  "model.name": ["model", "name"],
  "model.apiKeyEnv": ["model", "api_key_env"],
  "modes.default": ["modes", "default"],
  defaultAgent: ["default_agent"],
};

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const part of path.slice(0, -1)) {
    if (!isObject(node[part])) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[path[path.length - 1]] = value;
}

/** Unset (null/empty) settings are left out so `.ndomo/config.yaml` keeps its say. */
export function initializationOptions(get: Get): Record<string, unknown> {
  const extra = get<unknown>("initializationOptions");
  // VS Code hands setting objects back as read-only Proxies, which structuredClone rejects
  // (DataCloneError): a JSON round trip copies them (settings are JSON by definition).
  const out: Record<string, unknown> = isObject(extra) ? (JSON.parse(JSON.stringify(extra)) as Record<string, unknown>) : {};
  for (const [key, path] of Object.entries(SETTING_PATHS)) {
    const value = get<unknown>(key);
    if (value === null || value === undefined || value === "") continue;
    setPath(out, path, value);
  }
  return out;
}

/**
 * The server's command line. An explicit `ndomo.server.command` wins (with `${workspaceFolder}`
 * expanded); left at `ndomo`, a trusted workspace's `.venv/bin/ndomo` or `venv/bin/ndomo`
 * comes before PATH. An untrusted workspace never gets its own binary run: opening a folder
 * must not execute code the folder brings.
 */
export function serverCommand(get: Get, where: Where = { trusted: false, executable: () => false }): ServerCommand {
  const written = (get<string>("server.command") || DEFAULT_COMMAND).trim() || DEFAULT_COMMAND;
  const rawArgs = get<unknown>("server.args");
  const args = (Array.isArray(rawArgs) ? rawArgs.map(String) : ["serve"]).map((a) => expandVars(a, where));
  const rawEnv = get<unknown>("server.env");
  const env: Record<string, string> = {};
  if (isObject(rawEnv)) for (const [k, v] of Object.entries(rawEnv)) env[k] = expandVars(String(v), where);
  if (written !== DEFAULT_COMMAND) return { command: expandVars(written, where), args, env, origin: "setting" };
  if (where.trusted && where.folder) {
    const found = venvCandidates(where.folder, where.windows).find((p) => where.executable(p));
    if (found) return { command: found, args, env, origin: "workspace venv" };
  }
  return { command: DEFAULT_COMMAND, args, env, origin: "PATH" };
}

/** The message for a server that would not start: what failed and which setting fixes it. */
export function startFailure(cmd: ServerCommand, err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  const notFound = code === "ENOENT" || /\bENOENT\b/.test(text);
  const how = `Set "${COMMAND_SETTING}" to the full path of ndomo (e.g. /path/to/.venv/bin/ndomo), then run "ndomo: Restart server".`;
  if (notFound) {
    const where = cmd.origin === "PATH"
      ? `"${cmd.command}" is not on the PATH the editor sees (it comes from a login shell; Remote, SSH and code-server hosts have their own)`
      : `"${cmd.command}" (from ${cmd.origin === "setting" ? `"${COMMAND_SETTING}"` : "the workspace's virtualenv"}) does not exist`;
    return `ndomo: could not start the server: ${where}. ${how}`;
  }
  return `ndomo: could not start the server (${[cmd.command, ...cmd.args].join(" ")}): ${text}. See the "ndomo" output; check "${COMMAND_SETTING}" and "ndomo.server.args", then run "ndomo: Restart server".`;
}

/**
 * The initializationOptions a server starts with: the settings, and in VS Code's Restricted
 * Mode `workspaceTrusted: false`, which makes the server run every folder untrusted for this
 * session whatever ndomo recorded (a folder VS Code does not trust configures nothing).
 */
export function startOptions(get: Get, vscodeTrusted: boolean): Record<string, unknown> {
  const opts = initializationOptions(get);
  if (!vscodeTrusted) opts.workspaceTrusted = false;
  return opts;
}

/** The settings that say how the server process starts. */
export const SERVER_KEYS = ["server.command", "server.args", "server.env"];

/** A setting's values by level, as `WorkspaceConfiguration.inspect` gives them. */
export interface Inspected {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}
export type Inspect = (key: string) => Inspected | undefined;

/**
 * The `ndomo.server.*` settings a workspace sets (its `.vscode/settings.json` or the
 * `.code-workspace` file): a program the workspace chooses, run outside every sandbox.
 */
export function workspaceServerKeys(inspect: Inspect): string[] {
  return SERVER_KEYS.filter((k) => {
    const i = inspect(k);
    return i !== undefined && (i.workspaceValue !== undefined || i.workspaceFolderValue !== undefined);
  });
}

/** The settings as the user alone set them: workspace values left out (as in Restricted Mode). */
export function userOnly(inspect: Inspect): Get {
  return <T>(key: string) => {
    const i = inspect(key);
    return (i?.globalValue !== undefined ? i.globalValue : i?.defaultValue) as T | undefined;
  };
}

/** One key per command line, for remembering the ones the user approved. */
export function commandKey(cmd: ServerCommand): string {
  return JSON.stringify([cmd.command, cmd.args, Object.entries(cmd.env).sort()]);
}

/** The question before a workspace-chosen command line runs. */
export function workspaceCommandQuestion(cmd: ServerCommand, keys: string[]): { message: string; detail: string } {
  const line = [cmd.command, ...cmd.args].join(" ");
  const env = Object.keys(cmd.env).length ? `\nwith environment ${Object.keys(cmd.env).sort().join(", ")}` : "";
  return {
    message: "ndomo: the workspace settings choose how the ndomo server starts. Run this command?",
    detail:
      `${keys.map((k) => `ndomo.${k}`).join(", ")} from the workspace (.vscode/settings.json) would run:\n${line}${env}\n\n` +
      "It runs as you, outside ndomo's sandbox. A repository (or an agent writing .vscode/) can set this; " +
      "run it only if you wrote it. Otherwise ndomo starts as your user settings say.",
  };
}

/**
 * Settings whose change needs a server restart: only how the server process is started
 * (`ndomo.server.*`). Every other `ndomo.*` setting reaches the running server through
 * `workspace/didChangeConfiguration` and is applied there without a restart.
 */
export function affectsServer(changed: (section: string) => boolean): boolean {
  return changed("ndomo.server");
}

/** The configuration section the language client keeps in sync with the server. */
export const SETTINGS_SECTION = "ndomo";

/**
 * Answers to the server's `workspace/configuration` pull: for the `ndomo` section, the
 * folder's settings in the `.ndomo/config.yaml` shape (as sent in initializationOptions);
 * other sections keep VS Code's own answer.
 */
export function configurationAnswers(
  items: { section?: string; scopeUri?: string }[],
  answers: unknown[],
  getFor: (scopeUri: string | undefined) => Get,
): unknown[] {
  return items.map((item, i) => (item.section === SETTINGS_SECTION ? initializationOptions(getFor(item.scopeUri)) : answers[i]));
}
