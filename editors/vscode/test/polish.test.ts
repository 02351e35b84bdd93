// The conversation view's polish: a code action's selection chip, the view's badge for turns
// that arrive while it is hidden.
import { strict as assert } from "node:assert";
import { test } from "node:test";

import { applyEvent, describeSelection, emptyState, fenceRetry, welcomeFrom } from "../src/chat/model";
import { ChatView } from "../src/chat/view";

test("a code action's turn keeps its selection; a typed turn has none; bad input is dropped", () => {
  const s = emptyState();
  const selection = { path: "calc.py", start_line: 2, end_line: 3, text: "    return a - b\n" };
  applyEvent(s, { kind: "turn_started", turn_id: 1, agent: "craftsman", mode: "autopilot", prompt: "Fix it", selection });
  applyEvent(s, { kind: "turn_finished", turn_id: 1, status: "done" });
  applyEvent(s, { kind: "turn_started", turn_id: 2, agent: "foreman", mode: "discussion", prompt: "typed", selection: null });
  applyEvent(s, { kind: "turn_finished", turn_id: 2, status: "done" });
  applyEvent(s, { kind: "turn_started", turn_id: 3, agent: "foreman", mode: "discussion", prompt: "odd", selection: { path: 7 } });
  assert.deepEqual(s.turns[0].selection, selection);
  assert.equal(s.turns[1].selection, null);
  assert.equal(s.turns[2].selection, null);
});

test("the chip names file:lines and the first selected line, cut", () => {
  assert.deepEqual(describeSelection({ path: "calc.py", start_line: 2, end_line: 3, text: "\n    return a - b\n  x\n" }), {
    place: "calc.py:2–3",
    text: "return a - b…",
  });
  assert.deepEqual(describeSelection({ path: "calc.py", start_line: 5, end_line: 5, text: "x = 1" }), { place: "calc.py:5", text: "x = 1" });
  assert.deepEqual(describeSelection({ path: "src" }), { place: "src", text: "" });
  const long = describeSelection({ path: "a.py", start_line: 1, end_line: 1, text: "y".repeat(100) }, 10);
  assert.equal(long.text, "yyyyyyyyyy…");
});

test("turns arriving while the view is hidden badge it; showing the view clears the badge", async () => {
  const chat = new ChatView("dist" as any, { execute: async () => ({}) }, async () => undefined, (b: any, n) => `${b}/${n}` as any);
  let visibility: () => void = () => {};
  const view: any = {
    visible: true,
    badge: undefined,
    onDidChangeVisibility: (fn: () => void) => (visibility = fn),
    webview: { options: {}, html: "", cspSource: "x", asWebviewUri: (u: any) => u, onDidReceiveMessage: () => {}, postMessage: () => {} },
  };
  chat.resolveWebviewView(view);
  chat.onEvent({ kind: "turn_started", turn_id: 1, agent: "foreman", mode: "discussion", prompt: "seen" });
  chat.onEvent({ kind: "turn_finished", turn_id: 1, status: "done" });
  assert.equal(view.badge, undefined); // on screen: nothing to point at (never set)
  view.visible = false;
  visibility();
  chat.onEvent({ kind: "turn_started", turn_id: 2, agent: "craftsman", mode: "autopilot", prompt: "from a code action" });
  chat.onEvent({ kind: "turn_started", turn_id: 9, agent: "scout", mode: "research", prompt: "a sub-agent" }); // inside turn 2
  assert.deepEqual(view.badge, { value: 1, tooltip: "1 new ndomo turn" });
  chat.onEvent({ kind: "turn_finished", turn_id: 2, status: "done" });
  chat.onEvent({ kind: "turn_started", turn_id: 3, agent: "craftsman", mode: "autopilot", prompt: "from the CLI" });
  assert.deepEqual(view.badge, { value: 2, tooltip: "2 new ndomo turns" });
  view.visible = true;
  visibility();
  assert.deepEqual(view.badge, { value: 0, tooltip: "" }); // 0: VS Code keeps a badge set to undefined
});

test("a call the mode fence refused offers the mode that admits it; other refusals offer none", () => {
  const call = (summary: string, status: any = "refused") => ({ id: "c", name: "edit", arguments: {}, status, summary, output: "" });
  assert.equal(fenceRetry(call("tool 'edit' is not available in discussion mode; switch to brainstorming or autopilot")), "autopilot");
  assert.equal(fenceRetry(call("tool 'edit' is not available in discussion mode; switch to build")), "build");
  assert.equal(fenceRetry(call("tool 'x' is not available in discussion mode; switch to no registered mode")), null);
  assert.equal(fenceRetry(call("denied by rule 'rm *'")), null);
  const discussion = "refused: discussion mode writes only design artifacts (**/*.md, docs/**; never .ndomo/ or .git/); a.txt is not one — switch to autopilot";
  assert.equal(fenceRetry(call(discussion)), "autopilot");
  assert.equal(fenceRetry(call("tool 'edit' is not available in discussion mode; switch to autopilot", "failed")), null);
});

test("Switch and retry sets the mode, then sends the turn's prompt with its agent", async () => {
  const calls: [string, any][] = [];
  const status = (mode: string) => ({ session: "s", mode, agent: "foreman", busy: false, state: "", plan: null });
  const lsp = {
    async execute(command: string, args: any = {}) {
      calls.push([command, args]);
      if (command === "ndomo.session.open") return { session: "s", status: status("discussion"), more: 0, turns: [] };
      if (command === "ndomo.catalog")
        return {
          modes: [{ name: "discussion", description: "", default: true }, { name: "autopilot", description: "", default: false }],
          agents: [{ name: "foreman", description: "", default: true, primary: true }, { name: "craftsman", description: "", default: false, primary: true }],
        };
      if (command === "ndomo.mode.set") return status(args.mode);
      if (command === "ndomo.turn") return { turn_id: 5, status: "done" };
      return {};
    },
  };
  const chat = new ChatView("dist" as any, lsp, async () => undefined, (b: any, n) => `${b}/${n}` as any);
  let onMessage: (m: any) => Promise<void> = async () => {};
  chat.resolveWebviewView({
    webview: { options: {}, html: "", cspSource: "x", asWebviewUri: (u: any) => u, onDidReceiveMessage: (fn: any) => (onMessage = fn), postMessage: () => {} },
  });
  await onMessage({ type: "ready" });
  await onMessage({ type: "retry", mode: "autopilot", prompt: "fix add", agent: "craftsman" });
  assert.deepEqual(calls.filter(([c]) => c === "ndomo.mode.set" || c === "ndomo.turn"), [
    ["ndomo.mode.set", { mode: "autopilot" }],
    ["ndomo.turn", { prompt: "fix add", agent: "craftsman" }],
  ]);
  assert.equal(chat.state.status?.mode, "autopilot");
});

test("the welcome names the agents and modes by their first line, the model and the trust", () => {
  const cat = {
    agents: [{ name: "foreman", description: "Leads the work.\nMore." }],
    modes: [{ name: "discussion", description: "Talk only." }, { name: "autopilot" }],
  };
  const health = { model: { provider: "openai", name: "qwen3", ok: null }, trust: { state: "untrusted", note: "Restricted Mode" } };
  assert.deepEqual(welcomeFrom(cat, health), {
    agents: [{ name: "foreman", description: "Leads the work." }],
    modes: [{ name: "discussion", description: "Talk only." }, { name: "autopilot", description: "" }],
    model: "qwen3 (openai)",
    trust: "untrusted",
    trustNote: "Restricted Mode",
  });
  const bare = welcomeFrom(cat, null); // the server did not answer ndomo.health
  assert.equal(bare.model, "");
  assert.equal(bare.trust, "");
});

test("a view resolved anew clears the badge the earlier one showed", () => {
  const chat = new ChatView("dist" as any, { execute: async () => ({}) }, async () => undefined, (b: any, n) => `${b}/${n}` as any);
  const make = (visible: boolean) => {
    const sets: unknown[] = [];
    const v: any = {
      visible,
      set badge(b: unknown) { sets.push(b); },
      webview: { options: {}, html: "", cspSource: "x", asWebviewUri: (u: any) => u, onDidReceiveMessage: () => {}, postMessage: () => {} },
    };
    return { v, sets };
  };
  const hidden = make(false);
  chat.resolveWebviewView(hidden.v);
  chat.onEvent({ kind: "turn_started", turn_id: 1, agent: "craftsman", mode: "autopilot", prompt: "x" });
  assert.deepEqual(hidden.sets, [{ value: 1, tooltip: "1 new ndomo turn" }]);
  const fresh = make(true);
  chat.resolveWebviewView(fresh.v);
  assert.deepEqual(fresh.sets, [{ value: 0, tooltip: "" }]);
});
