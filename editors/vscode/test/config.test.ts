import { strict as assert } from "node:assert";
import { test } from "node:test";

import { affectsServer, initializationOptions, serverCommand } from "../src/config";

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
  assert.deepEqual(serverCommand(getter({})), { command: "ndomo", args: ["serve"], env: {} });
  assert.deepEqual(
    serverCommand(getter({ "server.command": "/venv/bin/python", "server.args": ["-m", "ndomo", "serve"], "server.env": { A: 1 } })),
    { command: "/venv/bin/python", args: ["-m", "ndomo", "serve"], env: { A: "1" } },
  );
});

test("which setting changes restart the server", () => {
  assert.equal(affectsServer((s) => s === "ndomo.model"), true);
  assert.equal(affectsServer((s) => s === "editor.fontSize"), false);
});
