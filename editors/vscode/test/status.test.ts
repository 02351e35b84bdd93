import { strict as assert } from "node:assert";
import { test } from "node:test";

import { formatStatus, parseStatus, SPINNER } from "../src/status";

const base = { session: "s1", mode: "discussion", agent: "foreman", busy: false, state: "idle", plan: null };

test("idle status shows agent and mode only", () => {
  assert.equal(formatStatus(base).text, "ndomo: foreman · discussion");
});

test("busy status gets the spinner", () => {
  const v = formatStatus({ ...base, busy: true });
  assert.ok(v.text.startsWith(`${SPINNER} `), v.text);
  assert.ok(v.text.endsWith("ndomo: foreman · discussion"));
  assert.match(v.tooltip, /turn running/);
});

test("craftsman state and plan progress", () => {
  const v = formatStatus({
    ...base,
    agent: "craftsman",
    mode: "autopilot",
    state: "in-scope",
    plan: { id: "p1", slug: "add-cache", done: 3, total: 5 },
  });
  assert.equal(v.text, "ndomo: craftsman · autopilot · in-scope · 3/5");
  assert.match(v.tooltip, /add-cache — 3\/5/);
});

test("a quiet outcome is not shown, a failure is", () => {
  assert.equal(formatStatus({ ...base, state: "done" }).text, "ndomo: foreman · discussion");
  assert.equal(formatStatus({ ...base, state: "failed" }).text, "ndomo: foreman · discussion · failed");
});

test("empty plan shows no counter", () => {
  assert.equal(formatStatus({ ...base, plan: { id: "p", done: 0, total: 0 } }).text, "ndomo: foreman · discussion");
});

test("no status yet and a stopped server", () => {
  assert.match(formatStatus(null).text, /starting/);
  assert.match(formatStatus(base, false).text, /stopped/);
});

test("parseStatus accepts the server payload and rejects junk", () => {
  const s = parseStatus({ ...base, plan: { id: "p", slug: "x", done: "2", total: 4 } });
  assert.deepEqual(s?.plan, { id: "p", slug: "x", done: 2, total: 4 });
  assert.equal(parseStatus(null), null);
  assert.equal(parseStatus({ mode: 3 }), null);
  assert.equal(parseStatus("nope"), null);
  assert.equal(parseStatus({ mode: "autopilot", agent: "craftsman" })?.busy, false);
});

test("a running turn's agent and mode replace the session's in the text, not the tooltip", () => {
  const s = { session: "s", mode: "discussion", agent: "foreman", busy: false, state: "idle", plan: null };
  const view = formatStatus(s, true, { agent: "craftsman", mode: "autopilot" });
  assert.equal(view.text, "$(sync~spin) ndomo: craftsman · autopilot");
  assert.match(view.tooltip, /Agent: foreman\nMode: discussion\nRunning turn: craftsman · autopilot/);
  assert.equal(formatStatus(s, true, null).text, "ndomo: foreman · discussion");
});

test("the tooltip shows the last turn's and the session's tokens, and the cost with a price", () => {
  const raw = {
    ...base,
    usage: {
      turn: { prompt: 1234, completion: 56 },
      session: { prompt: 5000, completion: 300 },
      cost: { turn: 0.0045, session: 0.0195, currency: "$" },
    },
  };
  const s = parseStatus(raw);
  const tip = formatStatus(s).tooltip;
  assert.match(tip, /Last turn: 1,234 prompt \+ 56 completion tokens/);
  assert.match(tip, /Session: 5,000 prompt \+ 300 completion tokens/);
  assert.match(tip, /Cost: last turn \$0\.0045, session \$0\.0195/);
  assert.equal(formatStatus(s).text, "ndomo: foreman · discussion"); // the bar stays short
  // before any turn, and without a price: the session's tokens only
  const quiet = parseStatus({ ...base, usage: { turn: null, session: { prompt: 0, completion: 0 }, cost: null } });
  const tip2 = formatStatus(quiet).tooltip;
  assert.match(tip2, /Session: 0 prompt \+ 0 completion tokens/);
  assert.doesNotMatch(tip2, /Last turn|Cost/);
  assert.equal(parseStatus({ ...base, usage: { session: "junk" } })?.usage, null);
});

test("sandbox.auto_allow shows in the bar and says what it means in the tooltip", () => {
  const v = formatStatus(parseStatus({ ...base, auto_allow: true })!);
  assert.equal(v.text, "ndomo: foreman · discussion · auto-allow");
  assert.match(v.tooltip, /run without asking when sandboxed and offline/);
  assert.equal(formatStatus(parseStatus({ ...base, auto_allow: false })!).text, "ndomo: foreman · discussion");
});
