/**
 * Workspace settings → the server's initializationOptions (the `.ndomo/config.yaml` shape)
 * and the server command line. Pure: `get` is injected (VS Code's configuration in the
 * extension, a plain map in tests).
 */

export type Get = <T>(key: string) => T | undefined;

export interface ServerCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
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
  const out: Record<string, unknown> = isObject(extra) ? structuredClone(extra) : {};
  for (const [key, path] of Object.entries(SETTING_PATHS)) {
    const value = get<unknown>(key);
    if (value === null || value === undefined || value === "") continue;
    setPath(out, path, value);
  }
  return out;
}

export function serverCommand(get: Get): ServerCommand {
  const command = (get<string>("server.command") || "ndomo").trim() || "ndomo";
  const rawArgs = get<unknown>("server.args");
  const args = Array.isArray(rawArgs) ? rawArgs.map(String) : ["serve"];
  const rawEnv = get<unknown>("server.env");
  const env: Record<string, string> = {};
  if (isObject(rawEnv)) for (const [k, v] of Object.entries(rawEnv)) env[k] = String(v);
  return { command, args, env };
}

/** Settings whose change needs a server restart. */
export function affectsServer(changed: (section: string) => boolean): boolean {
  return changed("ndomo.server") || changed("ndomo.model") || changed("ndomo.modes") ||
    changed("ndomo.defaultAgent") || changed("ndomo.initializationOptions");
}
