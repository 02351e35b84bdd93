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
  LC.advertised = undefined;
  LC.startError = undefined;
});

const STATUS = { session: "s1", mode: "discussion", agent: "foreman", busy: false, state: "idle", plan: null };
const enoent = (cmd: string) => Object.assign(new Error(`Launching server using command ${cmd} failed. Error: spawn ${cmd} ENOENT`), { code: "ENOENT" });

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

const ADVERTISED = {
  modes: [
    { name: "discussion", description: "talk", default: true },
    { name: "brainstorming", description: "research", default: false },
  ],
  agents: [{ name: "foreman", description: "plans", default: true, primary: true }],
};

test("status-bar click → pick a mode → ndomo.mode.set over executeCommand", async () => {
  const { client } = await start();
  LC.answers = { "ndomo.catalog": ADVERTISED };
  client.notify("ndomo/status", { session: "s", mode: "discussion", agent: "foreman", busy: false, state: "idle", plan: null });
  stub.pickBy = (items: any[]) => items.find((i) => i.args.mode === "brainstorming");
  await vscode.commands.executeCommand("ndomo.statusMenu");
  const sent = client.requests.filter((r: any) => r.params.command !== "ndomo.catalog");
  assert.deepEqual(sent, [
    { method: "workspace/executeCommand", params: { command: "ndomo.mode.set", arguments: [{ mode: "brainstorming" }] } },
  ]);
  assert.ok(stub.picked[0][0].label.includes("$(check) discussion"));
});

test("the menus fall back to the modes and agents of the initialize result", async () => {
  await start();
  LC.answers = { "ndomo.catalog": new Error("busy") };
  LC.advertised = ADVERTISED;
  stub.pickBy = () => undefined;
  await vscode.commands.executeCommand("ndomo.statusMenu");
  assert.deepEqual(
    stub.picked[0].map((i: any) => i.args.mode ?? i.args.agent),
    ["discussion", "brainstorming", "foreman"],
  );
});

test("with several folders the status bar shows the active editor's folder", async () => {
  const { client } = await start();
  const item = stub.statusItems[0];
  client.notify("ndomo/status", { ...STATUS, mode: "autopilot", folder: "file:///ws/a" });
  client.notify("ndomo/status", { ...STATUS, mode: "brainstorming", folder: "file:///ws/b" });
  assert.equal(item.text, "ndomo: foreman · brainstorming"); // no editor: the latest
  stub.activate("file:///ws/a/x.py");
  assert.equal(item.text, "ndomo: foreman · autopilot");
  client.notify("ndomo/status", { ...STATUS, mode: "discussion", folder: "file:///ws/b" });
  assert.equal(item.text, "ndomo: foreman · autopilot"); // b changed; a's file is active
  stub.activate("file:///ws/b/y.py");
  assert.equal(item.text, "ndomo: foreman · discussion");
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
  const ask = client.requestHandlers.get("window/showMessageRequest");
  const answer = ask({ message: "ok?", actions: [{ title: "Once" }] });
  assert.equal(chat.state.approvals[0].message, "ok?");
  await chat.receive({ type: "answer", id: chat.state.approvals[0].id, choice: "Once" });
  assert.deepEqual(await answer, { title: "Once" });
});

// -- the three defects met in a real VS Code ------------------------------------------------

test("the stub is as strict as VS Code: settings are read-only proxies, command ids unique", () => {
  stub.config = { "ndomo.initializationOptions": { model: { name: "x" } } };
  const value = vscode.workspace.getConfiguration("ndomo").get<any>("initializationOptions");
  assert.throws(() => structuredClone(value), /could not be cloned/);
  assert.throws(() => {
    value.model.name = "y";
  }, /read-only/);
  vscode.commands.registerCommand("x.once", () => 1);
  assert.throws(() => vscode.commands.registerCommand("x.once", () => 2), /already exists/);
});

test("an ndomo.initializationOptions object (a read-only proxy) reaches the server", async () => {
  stub.config = {
    "ndomo.initializationOptions": { model: { timeout_s: 30, name: "old" }, review_edits: true },
    "ndomo.model.name": "new",
  };
  const { client } = await start();
  assert.deepEqual(stub.errors, []);
  assert.equal(client.internalState, "running");
  assert.deepEqual(client.clientOptions.initializationOptions, { model: { timeout_s: 30, name: "new" }, review_edits: true });
});

test("the client starts although it registers every command the server advertises", async () => {
  const { client } = await start();
  assert.deepEqual(stub.errors, []);
  assert.equal(client.internalState, "running");
  for (const id of LC.serverCommands) assert.ok(stub.commands.has(id), `${id} not registered by the client`);
  const pkg = JSON.parse(readFileSync("package.json", "utf8"));
  for (const c of pkg.contributes.commands) {
    assert.ok(!LC.serverCommands.includes(c.command), `palette command ${c.command} is also a server command`);
  }
});

test("after a failed start, Restart server brings the server back without a reload", async () => {
  LC.startError = (c: any) => (c.serverOptions.command === "ndomo" ? enoent("ndomo") : undefined);
  const { client: failed } = await start();
  assert.equal(failed.internalState, "startFailed");
  assert.equal(stub.errors.length, 1);
  assert.match(stub.errors[0], /"ndomo" is not on the PATH/);
  assert.match(stub.errors[0], /Set "ndomo\.server\.command"/);
  assert.match(stub.statusItems[0].text, /stopped/);

  LC.startError = undefined;
  await vscode.commands.executeCommand("ndomo.restartServer");
  const again = clients.at(-1);
  assert.notEqual(again, failed);
  assert.equal(again.internalState, "running");
  assert.equal(stub.errors.length, 1, stub.errors.join("\n"));
  again.notify("ndomo/status", STATUS);
  assert.equal(stub.statusItems[0].text, "ndomo: foreman · discussion");
});

test("after a failed start, fixing ndomo.server.command starts the server", async () => {
  stub.config = { "ndomo.server.command": "/nowhere/ndomo" };
  LC.startError = (c: any) => (c.serverOptions.command === "/nowhere/ndomo" ? enoent("/nowhere/ndomo") : undefined);
  const { client: failed } = await start();
  assert.equal(failed.internalState, "startFailed");
  assert.match(stub.errors[0], /"\/nowhere\/ndomo" \(from "ndomo\.server\.command"\) does not exist/);

  stub.config = { "ndomo.server.command": "/venv/bin/ndomo" };
  await stub.changeConfig(["ndomo.server.command"]);
  const fixed = clients.at(-1);
  assert.equal(fixed.serverOptions.command, "/venv/bin/ndomo");
  assert.equal(fixed.internalState, "running");
  assert.equal(stub.errors.length, 1);
});

test("a model setting change reaches the running server without a restart", async () => {
  stub.config = { "ndomo.model.name": "first" };
  const { client } = await start();
  assert.equal(client.clientOptions.synchronize.configurationSection, "ndomo");
  stub.config = { "ndomo.model.name": "second", "ndomo.modes.default": "autopilot" };
  await stub.changeConfig(["ndomo.model.name", "ndomo.modes.default", "ndomo.initializationOptions"]);
  assert.equal(clients.length, 1, "the server was restarted");
  assert.equal(client.internalState, "running");
  // the server's pull (workspace/configuration) gets the new values in the config shape
  const pull = client.clientOptions.middleware.workspace.configuration;
  const next = async (params: any) => params.items.map(() => ({ model: { name: "raw VS Code shape" } }));
  const answers = await pull({ items: [{ section: "ndomo", scopeUri: "file:///ws" }] }, undefined, next);
  assert.deepEqual(answers, [{ model: { name: "second" }, modes: { default: "autopilot" } }]);

  await stub.changeConfig(["ndomo.server.args"]);  // how the server starts: a restart
  assert.equal(clients.length, 2);
});

test("a restart that fails again says so and a later one still works", async () => {
  await start();
  LC.startError = () => new Error("server crashed during initialize");
  await vscode.commands.executeCommand("ndomo.restartServer");
  assert.match(stub.errors.at(-1)!, /could not start the server \(ndomo serve\): server crashed/);
  LC.startError = undefined;
  await vscode.commands.executeCommand("ndomo.restartServer");
  assert.equal(clients.at(-1).internalState, "running");
});

// -- what users met in the real run -----------------------------------------------------------

test("the command comes from a trusted workspace's .venv, never an untrusted one's", async () => {
  const { mkdtempSync, mkdirSync, writeFileSync, chmodSync } = await import("node:fs");
  const { join } = await import("node:path");
  const { tmpdir } = await import("node:os");
  const folder = mkdtempSync(join(tmpdir(), "ndomo-ws-"));
  mkdirSync(join(folder, ".venv", "bin"), { recursive: true });
  writeFileSync(join(folder, ".venv", "bin", "ndomo"), "#!/bin/sh\n");
  chmodSync(join(folder, ".venv", "bin", "ndomo"), 0o755);
  stub.workspaceFolders = [{ uri: vscode.Uri.file(folder), name: "ws", index: 0 }];

  stub.isTrusted = false;
  const { client: untrusted } = await start();
  assert.equal(untrusted.serverOptions.command, "ndomo");

  stub.isTrusted = true;
  for (const fn of stub.trustListeners) await fn();
  assert.equal(clients.at(-1).serverOptions.command, join(folder, ".venv", "bin", "ndomo"));
});

test("untrusted workspaces are supported only in part, without the workspace's server settings", () => {
  const pkg = JSON.parse(readFileSync("package.json", "utf8"));
  const u = pkg.capabilities.untrustedWorkspaces;
  assert.equal(u.supported, "limited");
  assert.deepEqual(u.restrictedConfigurations.sort(), ["ndomo.server.args", "ndomo.server.command", "ndomo.server.env"]);
});

test("the client announces ndomo/saveDocuments and saves the named open documents", async () => {
  const { client } = await start();
  assert.deepEqual(client.capabilities.experimental, { ndomo: { saveDocuments: true, diagnostics: true } });
  const saved: string[] = [];
  stub.textDocuments = [
    { uri: vscode.Uri.file("/ws/a.py"), isDirty: true, save: async () => (saved.push("a"), true) },
    { uri: vscode.Uri.file("/ws/b.py"), isDirty: false, save: async () => (saved.push("b"), true) },
    { uri: vscode.Uri.file("/ws/c.py"), isDirty: true, save: async () => false },
  ];
  const res = await client.request("ndomo/saveDocuments", {
    uris: ["file:///ws/a.py", "file:///ws/b.py", "file:///ws/c.py", "file:///ws/closed.py"],
  });
  assert.deepEqual(res, { saved: ["file:///ws/a.py", "file:///ws/b.py"] });
  assert.deepEqual(saved, ["a"]);
  await assert.rejects(client.request("ndomo/saveDocuments", { files: [] }), /params must be/);
});

test("ndomo/diagnostics is answered from languages.getDiagnostics, in LSP's spelling, worst first", async () => {
  const { client } = await start();
  const at = (line: number) => ({ start: { line, character: 4 }, end: { line, character: 9 } });
  stub.diagnostics.set("/ws/a.py", [
    { message: "unused import", source: "Ruff", code: "F401", severity: 1, range: at(0) },
    { message: '"z" is not defined', source: "Pylance", code: { value: "reportUndefinedVariable" }, severity: 0, range: at(3) },
  ]);
  const res = await client.request("ndomo/diagnostics", { uris: ["file:///ws/a.py", "file:///ws/clean.py"] });
  assert.deepEqual(res, {
    items: [
      {
        uri: "file:///ws/a.py",
        diagnostics: [
          { message: '"z" is not defined', source: "Pylance", code: "reportUndefinedVariable", severity: 1, range: at(3) },
          { message: "unused import", source: "Ruff", code: "F401", severity: 2, range: at(0) },
        ],
      },
      { uri: "file:///ws/clean.py", diagnostics: [] },
    ],
  });
  await assert.rejects(client.request("ndomo/diagnostics", { files: [] }), /params must be/);
});

test("a turn's progress is a cancellable notification; Cancel sends ndomo.cancel", async () => {
  const { client } = await start();
  LC.answers = { "ndomo.cancel": { cancelled: true } };
  client.notify("ndomo/turn/event", { kind: "turn_started", turn_id: 7, session: "s1", agent: "craftsman", mode: "autopilot", prompt: "fix" });
  assert.equal(await client.request("window/workDoneProgress/create", { token: "t1" }), null);
  client.progress("t1", { kind: "begin", title: "craftsman · autopilot", message: "fix", cancellable: true });
  client.progress("t1", { kind: "report", message: "read", percentage: 40 });
  const p = stub.progresses[0];
  assert.equal(p.options.location, vscode.ProgressLocation.Notification);
  assert.equal(p.options.cancellable, true);
  assert.equal(p.options.title, "ndomo: craftsman · autopilot");
  assert.deepEqual(p.reports, [{ message: "fix" }, { message: "read", increment: 40 }]);
  p.cancel();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(client.requests.at(-1), { method: "workspace/executeCommand", params: { command: "ndomo.cancel", arguments: [{ session: "s1" }] } });
  client.progress("t1", { kind: "end", message: "cancelled" });
  await new Promise((r) => setImmediate(r));
  assert.equal(p.done, true);
});

test("while a turn runs the status bar names the turn's agent and mode", async () => {
  const { client } = await start();
  const item = stub.statusItems[0];
  client.notify("ndomo/status", STATUS);
  assert.equal(item.text, "ndomo: foreman · discussion");
  client.notify("ndomo/turn/event", { kind: "turn_started", turn_id: 3, session: "s1", agent: "craftsman", mode: "autopilot", prompt: "fix" });
  assert.equal(item.text, "$(sync~spin) ndomo: craftsman · autopilot");
  client.notify("ndomo/turn/event", { kind: "turn_started", turn_id: 4, session: "s1", agent: "scout", mode: "autopilot", prompt: "look" });
  client.notify("ndomo/turn/event", { kind: "turn_finished", turn_id: 4, status: "done" });
  assert.equal(item.text, "$(sync~spin) ndomo: craftsman · autopilot");
  client.notify("ndomo/status", { ...STATUS, busy: true });
  assert.equal(item.text, "$(sync~spin) ndomo: craftsman · autopilot");
  client.notify("ndomo/turn/event", { kind: "turn_finished", turn_id: 3, status: "done" });
  assert.equal(item.text, "$(sync~spin) ndomo: foreman · discussion");
  client.notify("ndomo/status", STATUS);
  assert.equal(item.text, "ndomo: foreman · discussion");
});

test("a document the server shows without focus opens beside, keeping the cursor", async () => {
  const { client } = await start();
  const show = client.clientOptions.middleware.window.showDocument;
  const next = async () => ({ success: false });
  stub.activeTextEditor = { document: { uri: vscode.Uri.parse("file:///ws/calc.py") }, selection: {} };
  const res = await show({ uri: "file:///ws/.ndomo/sessions/s1.md", takeFocus: false }, next);
  assert.deepEqual(res, { success: true });
  assert.equal(stub.shown.length, 1);
  assert.equal(stub.shown[0].options.viewColumn, vscode.ViewColumn.Beside);
  assert.equal(stub.shown[0].options.preserveFocus, true);
  // already visible: not opened a second time
  stub.visibleTextEditors = [{ document: { uri: vscode.Uri.parse("file:///ws/.ndomo/sessions/s1.md") } }];
  await show({ uri: "file:///ws/.ndomo/sessions/s1.md" }, next);
  assert.equal(stub.shown.length, 1);
  // nothing being edited: no empty group to the left
  stub.visibleTextEditors = [];
  stub.activeTextEditor = undefined;
  await show({ uri: "file:///ws/.ndomo/sessions/s2.md" }, next);
  assert.equal(stub.shown[1].options.viewColumn, vscode.ViewColumn.Active);
  // with focus: the client's own handling
  assert.deepEqual(await show({ uri: "file:///ws/x.py", takeFocus: true }, next), { success: false });
});
