import { strict as assert } from "node:assert";
import { test } from "node:test";

import { affectsServer, configurationAnswers, expandVars, initializationOptions, serverCommand, startFailure, venvCandidates } from "../src/config";

const getter = (m: Record<string, unknown>) => <T>(k: string) => m[k] as T | undefined;

test("model settings go into the config shape; unset ones are left out", () => {
  const opts = initializationOptions(
    getter({
      "model.baseUrl": "http://127.0.0.1:8000/v1",
      "model.name": "qwen",
      "model.apiKeyEnv": "MY_KEY",
      "model.provider": null,
      "modes.default": "autopilot",
      defaultAgent: "",
    }),
  );
  assert.deepEqual(opts, {
    model: { base_url: "http://127.0.0.1:8000/v1", name: "qwen", api_key_env: "MY_KEY" },
    modes: { default: "autopilot" },
  });
});

test("extra initializationOptions merge under the explicit keys", () => {
  const opts = initializationOptions(
    getter({
      initializationOptions: { model: { name: "old", timeout_s: 30 }, review_edits: true },
      "model.name": "new",
    }),
  );
  assert.deepEqual(opts, { model: { name: "new", timeout_s: 30 }, review_edits: true });
});

test("server command defaults and overrides", () => {
  assert.deepEqual(serverCommand(getter({})), { command: "ndomo", args: ["serve"], env: {}, origin: "PATH" });
  assert.deepEqual(
    serverCommand(getter({ "server.command": "/venv/bin/python", "server.args": ["-m", "ndomo", "serve"], "server.env": { A: 1 } })),
    { command: "/venv/bin/python", args: ["-m", "ndomo", "serve"], env: { A: "1" }, origin: "setting" },
  );
});

test("a proxied initializationOptions object is copied, not cloned", () => {
  const frozen = new Proxy({ model: { name: "x" } }, { set: () => false });
  assert.throws(() => structuredClone(frozen));
  assert.deepEqual(initializationOptions(getter({ initializationOptions: frozen })), { model: { name: "x" } });
});

const ws = (trusted: boolean, present: string[]) => ({ folder: "/ws", home: "/home/u", trusted, executable: (p: string) => present.includes(p) });

test("${workspaceFolder} and ${userHome} are expanded in the command, args and env", () => {
  const cmd = serverCommand(
    getter({
      "server.command": "${workspaceFolder}/.venv/bin/python",
      "server.args": ["-m", "ndomo", "serve", "--log", "${userHome}/ndomo.log"],
      "server.env": { NDOMO_HOME: "${workspaceFolder}/x", OTHER: "${env:HOME}" },
    }),
    ws(true, []),
  );
  assert.equal(cmd.command, "/ws/.venv/bin/python");
  assert.deepEqual(cmd.args, ["-m", "ndomo", "serve", "--log", "/home/u/ndomo.log"]);
  assert.deepEqual(cmd.env, { NDOMO_HOME: "/ws/x", OTHER: "${env:HOME}" });
  assert.equal(expandVars("${workspaceFolder}/a", { home: "/h" }), "${workspaceFolder}/a");
});

test("the workspace's .venv/bin/ndomo comes before PATH only when the workspace is trusted", () => {
  assert.deepEqual(venvCandidates("/ws/"), ["/ws/.venv/bin/ndomo", "/ws/venv/bin/ndomo"]);
  assert.deepEqual(venvCandidates("C:\\ws", true), ["C:\\ws\\.venv\\Scripts\\ndomo.exe", "C:\\ws\\venv\\Scripts\\ndomo.exe"]);
  const trusted = serverCommand(getter({}), ws(true, ["/ws/venv/bin/ndomo"]));
  assert.deepEqual([trusted.command, trusted.origin], ["/ws/venv/bin/ndomo", "workspace venv"]);
  const both = serverCommand(getter({}), ws(true, ["/ws/venv/bin/ndomo", "/ws/.venv/bin/ndomo"]));
  assert.equal(both.command, "/ws/.venv/bin/ndomo");
  const untrusted = serverCommand(getter({}), ws(false, ["/ws/.venv/bin/ndomo"]));
  assert.deepEqual([untrusted.command, untrusted.origin], ["ndomo", "PATH"]);
  const explicit = serverCommand(getter({ "server.command": "/opt/ndomo" }), ws(true, ["/ws/.venv/bin/ndomo"]));
  assert.equal(explicit.command, "/opt/ndomo");
});

test("a start failure names the setting that fixes it", () => {
  const path = startFailure(serverCommand(getter({})), Object.assign(new Error("spawn ndomo ENOENT"), { code: "ENOENT" }));
  assert.match(path, /"ndomo" is not on the PATH the editor sees/);
  assert.match(path, /Set "ndomo\.server\.command" to the full path/);
  const set = startFailure(serverCommand(getter({ "server.command": "/x/ndomo" })), new Error("spawn /x/ndomo ENOENT"));
  assert.match(set, /"\/x\/ndomo" \(from "ndomo\.server\.command"\) does not exist/);
  const other = startFailure(serverCommand(getter({})), new Error("boom"));
  assert.match(other, /could not start the server \(ndomo serve\): boom/);
});

test("only ndomo.server.* changes restart the server", () => {
  assert.equal(affectsServer((s) => s === "ndomo.server"), true);
  for (const other of ["ndomo.model", "ndomo.modes", "ndomo.defaultAgent", "ndomo.initializationOptions", "editor.fontSize"]) {
    assert.equal(affectsServer((s) => s === other), false, other);
  }
});

test("the server's workspace/configuration pull gets ndomo in the config shape", () => {
  const items = [{ section: "ndomo", scopeUri: "file:///a" }, { section: "editor" }];
  const answers = configurationAnswers(items, [{ model: { baseUrl: "raw" } }, { tabSize: 2 }], (scope) =>
    getter(scope === "file:///a" ? { "model.name": "qwen", initializationOptions: { review_edits: true } } : {}),
  );
  assert.deepEqual(answers, [{ review_edits: true, model: { name: "qwen" } }, { tabSize: 2 }]);
});
