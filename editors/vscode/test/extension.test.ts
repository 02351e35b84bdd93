// The real extension module against the vscode / language-client stubs.
import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { beforeEach, test } from "node:test";

import * as vscode from "vscode";
import * as lc from "vscode-languageclient/node";

import { activate, deactivate } from "../src/extension";

const stub = (vscode as any).stub;
const LC = (lc as any).LanguageClient;
const clients: any[] = (lc as any).clients;

async function start() {
  const context = { subscriptions: [] as { dispose(): unknown }[], extensionUri: { path: "/ext" } };
  await activate(context as any);
  return { context, client: clients.at(-1) };
}

beforeEach(async () => {
  await deactivate();
  stub.reset();
  clients.length = 0;
  LC.answers = {};
});

test("activate registers every contributed command and starts the configured server", async () => {
  stub.config = {
    "ndomo.server.command": "/venv/bin/python",
    "ndomo.server.args": ["-m", "ndomo", "serve"],
    "ndomo.model.baseUrl": "http://127.0.0.1:9/v1",
    "ndomo.model.name": "m",
  };
  const { client } = await start();
  const pkg = JSON.parse(readFileSync("package.json", "utf8"));
  for (const c of pkg.contributes.commands) assert.ok(stub.commands.has(c.command), `${c.command} not registered`);
  assert.equal(client.serverOptions.command, "/venv/bin/python");
  assert.deepEqual(client.serverOptions.args, ["-m", "ndomo", "serve"]);
  assert.deepEqual(client.clientOptions.initializationOptions, { model: { base_url: "http://127.0.0.1:9/v1", name: "m" } });
});

test("ndomo/status drives the status-bar item", async () => {
  const { client } = await start();
  const item = stub.statusItems[0];
  assert.equal(item.command, "ndomo.statusMenu");
  assert.ok(item.visible);
  client.notify("ndomo/status", { session: "s", mode: "autopilot", agent: "craftsman", busy: true, state: "idle", plan: { id: "p", slug: "x", done: 2, total: 5 } });
  assert.equal(item.text, "$(sync~spin) ndomo: craftsman · autopilot · 2/5");
  client.notify("ndomo/status", { session: "s", mode: "autopilot", agent: "craftsman", busy: false, state: "idle", plan: null });
  assert.equal(item.text, "ndomo: craftsman · autopilot");
});

test("status-bar click → pick a mode → ndomo.mode.set over executeCommand", async () => {
  const { client } = await start();
  client.notify("ndomo/status", { session: "s", mode: "discussion", agent: "foreman", busy: false, state: "idle", plan: null });
  stub.pickBy = (items: any[]) => items.find((i) => i.args.mode === "brainstorming");
  await vscode.commands.executeCommand("ndomo.statusMenu");
  const sent = client.requests.filter((r: any) => r.params.command !== "ndomo.agents.list");
  assert.deepEqual(sent, [
    { method: "workspace/executeCommand", params: { command: "ndomo.mode.set", arguments: [{ mode: "brainstorming" }] } },
  ]);
  assert.ok(stub.picked[0][0].label.includes("$(check) discussion"));
});

test("a server error becomes an error message, not an exception", async () => {
  const { client } = await start();
  LC.answers = { "ndomo.undo": new Error("nothing to undo") };
  await vscode.commands.executeCommand("ndomo.undoTurn");
  assert.equal(client.requests.length, 1);
  assert.deepEqual(stub.errors, ["ndomo: nothing to undo"]);
});

test("turn events go to the transcript channel", async () => {
  const { client } = await start();
  client.notify("ndomo/turn/event", { kind: "text", text: "hello" });
  assert.deepEqual(stub.output.get("ndomo transcript"), ["hello"]);
});

test("the conversation view gets the turn events, the status and the editor's questions", async () => {
  const { client } = await start();
  const chat: any = stub.webviewViews.get("ndomo.chat");
  assert.ok(chat, "the conversation view is registered");
  client.notify("ndomo/turn/event", { kind: "turn_started", turn_id: 3, agent: "craftsman", mode: "autopilot", prompt: "fix the bug" });
  client.notify("ndomo/turn/event", { kind: "text", turn_id: 3, text: "fixed" });
  client.notify("ndomo/status", { session: "s", mode: "autopilot", agent: "craftsman", busy: true, state: "idle", plan: null });
  assert.equal(chat.state.turns[0].prompt, "fix the bug");
  assert.equal(chat.state.turns[0].items[0].text, "fixed");
  assert.equal(chat.state.status.busy, true);
  const ask = client.serverRequests.get("window/showMessageRequest");
  const answer = ask({ message: "ok?", actions: [{ title: "Allow once" }] });
  assert.equal(chat.state.approvals[0].message, "ok?");
  await chat.receive({ type: "answer", id: chat.state.approvals[0].id, choice: "Allow once" });
  assert.deepEqual(await answer, { title: "Allow once" });
});
