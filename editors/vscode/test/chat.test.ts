// The conversation view: its page's security policy, its state from server events, and the
// view provider against the stubs (no editor).
import { strict as assert } from "node:assert";
import { test } from "node:test";

import { chatHtml, csp } from "../src/chat/html";
import { applyEvent, applyHistory, applyStatus, describeOutcome, describeStatus, emptyState } from "../src/chat/model";
import { ChatView } from "../src/chat/view";

const SOURCE = "https://file+.vscode-resource.vscode-cdn.net";

test("the page allows no remote resources: default none, scripts by nonce only, theme colours", () => {
  const html = chatHtml(SOURCE, `${SOURCE}/ext/dist/chat.js`, "N0NCE");
  const policy = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)![1];
  assert.equal(policy, csp(SOURCE, "N0NCE"));
  const rules = Object.fromEntries(policy.split("; ").map((r) => [r.split(" ")[0], r.split(" ").slice(1)]));
  assert.deepEqual(rules["default-src"], ["'none'"]);
  assert.deepEqual(rules["script-src"], ["'nonce-N0NCE'"]);
  for (const [name, sources] of Object.entries(rules)) {
    for (const s of sources as string[]) {
      assert.ok(s === SOURCE || s.startsWith("'") || s === "data:", `${name} allows ${s}`);
    }
  }
  // every script and style carries the nonce; nothing is loaded from elsewhere
  for (const tag of html.match(/<(script|style)\b[^>]*>/g)!) assert.match(tag, /nonce="N0NCE"/);
  const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
  assert.deepEqual(urls, [`${SOURCE}/ext/dist/chat.js`]);
  assert.doesNotMatch(html.replaceAll(SOURCE, ""), /https?:\/\//);
  assert.match(html, /var\(--vscode-foreground\)/);
  assert.doesNotMatch(html, /#[0-9a-fA-F]{3,6}\b/); // no hard-coded colours
});

test("turn events stream into the state: text merged, tool calls with status, output and refusals", () => {
  const s = emptyState();
  applyEvent(s, { kind: "turn_started", turn_id: 7, session: "s", agent: "craftsman", mode: "autopilot", prompt: "fix it" });
  applyEvent(s, { kind: "text", turn_id: 7, text: "Look" });
  applyEvent(s, { kind: "text", turn_id: 7, text: "ing." });
  applyEvent(s, { kind: "tool_started", turn_id: 7, call_id: "c1", name: "bash", arguments: { command: "make" } });
  applyEvent(s, { kind: "tool_output", turn_id: 7, call_id: "c1", name: "bash", text: "compiling\n" });
  const t = s.turns[0];
  assert.equal(t.items[0].kind === "text" && t.items[0].text, "Looking.");
  const call = t.items[1].kind === "tool" ? t.items[1].call : null;
  assert.equal(call?.status, "running");
  assert.equal(call?.output, "compiling\n");
  applyEvent(s, { kind: "tool_finished", turn_id: 7, call_id: "c1", name: "bash", status: "done", summary: "exit code: 0" });
  applyEvent(s, { kind: "tool_started", turn_id: 7, call_id: "c2", name: "web_fetch", arguments: {} });
  applyEvent(s, { kind: "tool_finished", turn_id: 7, call_id: "c2", name: "web_fetch", status: "refused", summary: "not in autopilot" });
  applyEvent(s, { kind: "turn_finished", turn_id: 7, status: "blocked", error: "need the API key" });
  assert.equal(call?.status, "done");
  assert.equal(t.items[2].kind === "tool" && t.items[2].call.status, "refused");
  assert.equal(describeOutcome(t), "handed back: need the API key");
});

test("history from session.open, and a switch of session clears the view", () => {
  const s = emptyState();
  applyHistory(s, {
    session: "s1", more: 0, status: { session: "s1", mode: "discussion", agent: "foreman", busy: false, state: "idle", plan: null },
    turns: [{ id: 1, prompt: "hi", agent: "foreman", mode: "discussion", status: "done", error: null, started_at: "t",
      items: [{ kind: "tool", call_id: "x", name: "glob", arguments: {}, result: "a.py" }, { kind: "text", text: "one file" }] }],
  });
  assert.equal(s.turns[0].items.length, 2);
  assert.equal(s.status?.mode, "discussion");
  applyStatus(s, { session: "s2", mode: "discussion", agent: "foreman", busy: false, state: "idle", plan: null });
  assert.deepEqual(s.turns, []);
});

function fakeView() {
  const posted: any[] = [];
  let onMessage: (m: any) => Promise<void> = async () => {};
  return {
    posted,
    send: (m: any) => onMessage(m),
    view: {
      webview: {
        options: {} as any,
        html: "",
        cspSource: SOURCE,
        asWebviewUri: (u: any) => `${SOURCE}/${u}`,
        onDidReceiveMessage: (fn: any) => (onMessage = fn),
        postMessage: (m: any) => posted.push(JSON.parse(JSON.stringify(m))),
      },
    },
  };
}

test("the view loads the history, sends prompts, stops turns and single tool calls", async () => {
  const calls: [string, any][] = [];
  const lsp = {
    async execute(command: string, args: any = {}) {
      calls.push([command, args]);
      if (command === "ndomo.session.open") return { session: "s", status: null, more: 0, turns: [{ id: 1, prompt: "earlier", status: "done", items: [] }] };
      if (command === "ndomo.catalog")
        return {
          modes: [{ name: "talk", description: "", default: true }, { name: "build", description: "", default: false }],
          agents: [{ name: "foreman", description: "", default: true, primary: true }, { name: "scout", description: "", default: false, primary: false }],
        };
      if (command === "ndomo.turn") return { turn_id: 2, status: "done" };
      return {};
    },
  };
  const chat = new ChatView("dist" as any, lsp, async () => undefined, (b: any, n) => `${b}/${n}` as any);
  const fv = fakeView();
  chat.resolveWebviewView(fv.view);
  assert.match(fv.view.webview.html, /src="https:\/\/file\+\.vscode-resource\.vscode-cdn\.net\/dist\/chat\.js"/);
  assert.equal(fv.view.webview.options.enableScripts, true);
  await fv.send({ type: "ready" });
  const last = () => fv.posted.at(-1).state;
  assert.deepEqual(last().turns.map((t: any) => t.prompt), ["earlier"]);
  assert.deepEqual(last().agents, ["foreman"]);
  assert.deepEqual(last().modes, ["talk", "build"]);
  await fv.send({ type: "send", prompt: "  now this  " });
  await fv.send({ type: "cancelCall", id: "call_1" });
  await fv.send({ type: "cancel" });
  await fv.send({ type: "setMode", mode: "autopilot" });
  assert.deepEqual(calls.slice(2), [
    ["ndomo.turn", { prompt: "now this" }],
    ["ndomo.toolcall.cancel", { id: "call_1" }],
    ["ndomo.cancel", {}],
    ["ndomo.mode.set", { mode: "autopilot" }],
  ]);
  chat.onEvent({ kind: "turn_started", turn_id: 2, agent: "foreman", mode: "discussion", prompt: "now this" });
  assert.equal(last().turns.at(-1).prompt, "now this");
});

test("an approval is answered inline or by the notification, whichever comes first", async () => {
  let popupAnswer: (v: string | undefined) => void = () => {};
  const chat = new ChatView("dist" as any, { execute: async () => ({}) }, () => new Promise((r) => (popupAnswer = r)), (b: any, n) => `${b}/${n}` as any);
  const fv = fakeView();
  chat.resolveWebviewView(fv.view);
  const asked = chat.ask({ message: "craftsman wants bash: make", actions: [{ title: "Once" }, { title: "Deny" }] });
  const shown = fv.posted.at(-1).state.approvals;
  assert.equal(shown.length, 1);
  assert.deepEqual(shown[0].choices, ["Once", "Deny"]);
  await fv.send({ type: "answer", id: shown[0].id, choice: "Once" });
  assert.deepEqual(await asked, { title: "Once" });
  assert.deepEqual(fv.posted.at(-1).state.approvals, []);
  const second = chat.ask({ message: "again?", actions: [{ title: "Deny" }] });
  popupAnswer("Deny");
  assert.deepEqual(await second, { title: "Deny" });
});

const APPROVE_PARAMS = {
  message: "`echo` matches no rule · if allowed it runs WITH network, sandboxed (bubblewrap)\ncraftsman (autopilot) wants bash: echo hi",
  reason: "`echo` matches no rule", permission: "bash", subject: "echo hi", agent: "craftsman", mode: "autopilot",
  rule: "echo *", sandbox: "sandboxed (bubblewrap)", network: true, destinations: [],
  choices: [
    { id: "once", label: "Run once", detail: "allow this call only" },
    { id: "session", label: "Session", detail: "allow `echo *` until the session ends" },
    { id: "project", label: "Always", detail: "allow `echo *` in this project" },
    { id: "deny", label: "Deny", detail: "refuse this call" },
  ],
};

test("a structured approval is answered by its id in the view; the server's decision event is the turn's line", async () => {
  const toasts: [string, string[]][] = [];
  let toastAnswer: (v: string | undefined) => void = () => {};
  const chat = new ChatView("dist" as any, { execute: async () => ({}) }, (m, c) => {
    toasts.push([m, c]);
    return new Promise((r) => (toastAnswer = r));
  }, (b: any, n) => `${b}/${n}` as any);
  const fv = fakeView();
  (fv.view as any).visible = true;
  chat.resolveWebviewView(fv.view);
  chat.onEvent({ kind: "turn_started", turn_id: 1, agent: "craftsman", mode: "autopilot", prompt: "say hi" });
  const asked = chat.approve(APPROVE_PARAMS);
  const shown = fv.posted.at(-1).state.approvals[0];
  assert.deepEqual(shown.choices, ["once", "session", "project", "deny"]);
  assert.equal(shown.parts.rule, "echo *");
  await fv.send({ type: "answer", id: shown.id, choice: "project" });
  assert.deepEqual(await asked, { choice: "project" });
  assert.deepEqual(fv.posted.at(-1).state.turns[0].items, []); // the words are the server's
  chat.onEvent({ kind: "decision", turn_id: 1, call_id: "c1", text: "always allowed `echo *` in this project by you" });
  assert.deepEqual(fv.posted.at(-1).state.turns[0].items.at(-1), { kind: "decision", text: "always allowed `echo *` in this project by you" });
  assert.deepEqual(toasts, []); // the view was on screen
  // hidden: the notification shows the short text and the labels; its label answers by id
  (fv.view as any).visible = false;
  const again = chat.approve(APPROVE_PARAMS);
  assert.deepEqual(toasts, [[APPROVE_PARAMS.message, ["Run once", "Session", "Always", "Deny"]]]);
  toastAnswer("Run once");
  assert.deepEqual(await again, { choice: "once" });
  assert.deepEqual(fv.posted.at(-1).state.approvals, []);
});

test("a call's sandbox, files and decision, and a turn's selection, are the same live and from the history", () => {
  const files = [{ path: "new.txt", kind: "create", diff: "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n", line: 1, cut: false }];
  const selection = { path: "calc.py", start_line: 2, end_line: 2, text: "    return a - b" };
  const live = emptyState();
  applyEvent(live, { kind: "turn_started", turn_id: 4, agent: "craftsman", mode: "autopilot", prompt: "go", selection });
  applyEvent(live, { kind: "tool_started", turn_id: 4, call_id: "c1", name: "bash", arguments: { command: "pytest" } });
  applyEvent(live, { kind: "decision", turn_id: 4, call_id: "c1", text: "auto-allowed (sandboxed, offline)" });
  applyEvent(live, { kind: "tool_finished", turn_id: 4, call_id: "c1", name: "bash", status: "done", summary: "exit code: 0", sandbox: "sandboxed · offline" });
  applyEvent(live, { kind: "tool_started", turn_id: 4, call_id: "c2", name: "write", arguments: { path: "new.txt", content: "a\nb\n" } });
  applyEvent(live, { kind: "tool_finished", turn_id: 4, call_id: "c2", name: "write", status: "done", summary: "created new.txt", files });
  const stored = emptyState();
  applyHistory(stored, {
    session: "s", turns: [{
      id: 4, prompt: "go", agent: "craftsman", mode: "autopilot", status: "done", selection, items: [
        { kind: "tool", call_id: "m1", name: "bash", arguments: { command: "pytest" }, result: "exit code: 0", status: "done", sandbox: "sandboxed · offline", decision: "auto-allowed (sandboxed, offline)" },
        { kind: "tool", call_id: "m2", name: "write", arguments: { path: "new.txt", content: "a\nb\n" }, result: "created new.txt", status: "done", files },
      ],
    }],
  });
  const shape = (s: any) => s.turns[0].items.map((i: any) => (i.kind === "tool" ? [i.call.name, i.call.sandbox ?? null, i.call.files ?? null] : [i.kind, i.text]));
  assert.deepEqual(shape(stored), [
    ["bash", "sandboxed · offline", null],
    ["decision", "auto-allowed (sandboxed, offline)"],
    ["write", null, files],
  ]);
  // live, the decision arrives while the call runs: after its card too
  assert.deepEqual(shape(live), shape(stored));
  assert.deepEqual(stored.turns[0].selection, selection);
  assert.deepEqual(live.turns[0].selection, selection);
});

test("notes are listed and one is deleted from the palette", async () => {
  const { findCommand } = await import("../src/commands");
  const sent: [string, any][] = [];
  const ctx: any = {
    lsp: { async execute(c: string, a: any) { sent.push([c, a]); return c === "ndomo.memory.list" ? [{ id: 4, category: "fact", content: "uses uv" }] : {}; } },
    ui: { pick: async (items: any[]) => items[0], info: () => {}, error: () => {} },
    status: () => null,
  };
  await findCommand("ndomo.notes")!.run(ctx);
  assert.deepEqual(sent, [["ndomo.memory.list", {}], ["ndomo.memory.delete", { id: 4 }]]);
});

test("a view opened before the server runs loads the history once it starts; a session switch reloads", async () => {
  let up = false;
  let session = "s1";
  const lsp = {
    async execute(command: string) {
      if (!up) throw new Error("the ndomo server is not running");
      if (command === "ndomo.session.open") return { session, status: null, more: 0, turns: [{ id: 1, prompt: `in ${session}`, status: "done", items: [] }] };
      return [];
    },
  };
  const chat = new ChatView("dist" as any, lsp, async () => undefined, (b: any, n) => `${b}/${n}` as any);
  const fv = fakeView();
  chat.resolveWebviewView(fv.view);
  await fv.send({ type: "ready" });
  assert.deepEqual(fv.posted.at(-1).state.turns, []); // no error turn: just not loaded yet
  up = true;
  chat.reset();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(fv.posted.at(-1).state.turns.map((t: any) => t.prompt), ["in s1"]);
  session = "s2";
  chat.onStatus({ session: "s2", mode: "discussion", agent: "foreman", busy: false, state: "idle", plan: null });
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(fv.posted.at(-1).state.turns.map((t: any) => t.prompt), ["in s2"]);
});

test("a turn that streams before the history comes back keeps what it streamed, once", async () => {
  let answer: (v: unknown) => void = () => undefined;
  const lsp = {
    async execute(command: string) {
      if (command === "ndomo.session.open") return new Promise((r) => (answer = r));
      return [];
    },
  };
  const chat = new ChatView("dist" as any, lsp, async () => undefined, (b: any, n) => `${b}/${n}` as any);
  const fv = fakeView();
  chat.resolveWebviewView(fv.view);
  const ready = fv.send({ type: "ready" });
  chat.onEvent({ kind: "turn_started", turn_id: 7, agent: "craftsman", mode: "autopilot", prompt: "run it" });
  chat.onEvent({ kind: "text", turn_id: 7, text: "streamed before" });
  // the store already holds the running turn (without what streamed so far)
  answer({ session: "s", status: null, more: 0, turns: [
    { id: 6, prompt: "earlier", status: "done", items: [] },
    { id: 7, prompt: "run it", status: "running", items: [] },
  ] });
  await ready;
  chat.onEvent({ kind: "turn_finished", turn_id: 7, status: "done" });
  const turns = fv.posted.at(-1).state.turns;
  assert.deepEqual(turns.map((t: any) => [t.id, t.status]), [[6, "done"], [7, "done"]]);
  assert.deepEqual(turns[1].items, [{ kind: "text", text: "streamed before" }]);
});

test("the header says the scope state and plan progress in plain words", () => {
  assert.equal(describeStatus({ session: "s", mode: "autopilot", agent: "craftsman", busy: true, state: "state 2 · planned (3/5 files)", plan: { slug: "cache", done: 1, total: 4 } }),
    "craftsman · autopilot · working… · state 2 · planned (3/5 files) · plan cache 1/4");
  assert.equal(describeStatus({ session: "s", mode: "discussion", agent: "foreman", busy: false, state: "idle", plan: null }), "foreman · discussion");
});

test("the header shows the session's tokens and cost once there are any", () => {
  const s = { session: "s", mode: "discussion", agent: "foreman", busy: false, state: "idle", plan: null };
  const usage = { session: { prompt: 75310, completion: 300 }, cost: { session: 0.0195, currency: "$" } };
  assert.equal(describeStatus({ ...s, usage }), "foreman · discussion · tokens 75k+300 $0.0195");
  assert.equal(describeStatus({ ...s, usage: { session: { prompt: 1234, completion: 5 }, cost: null } }), "foreman · discussion · tokens 1.2k+5");
  assert.equal(describeStatus({ ...s, usage: { session: { prompt: 0, completion: 0 }, cost: null } }), "foreman · discussion");
});
