import { strict as assert } from "node:assert";
import { test } from "node:test";

import { TurnTracker } from "../src/turns";

test("the top-level turn is tracked; sub-agent turns nest inside it", () => {
  const t = new TurnTracker();
  assert.equal(t.onEvent({ kind: "text", text: "x" }), false);
  assert.equal(t.onEvent({ kind: "turn_started", turn_id: 1, session: "s", agent: "craftsman", mode: "autopilot" }), true);
  assert.equal(t.onEvent({ kind: "turn_started", turn_id: 2, session: "s", agent: "scout", mode: "autopilot" }), false);
  assert.equal(t.onEvent({ kind: "turn_finished", turn_id: 2, status: "done" }), false);
  assert.deepEqual(t.current, { turnId: 1, session: "s", agent: "craftsman", mode: "autopilot" });
  assert.equal(t.onEvent({ kind: "turn_finished", turn_id: 1, status: "done" }), true);
  assert.equal(t.current, null);
});

test("without turn ids the nesting is counted", () => {
  const t = new TurnTracker();
  t.onEvent({ kind: "turn_started", agent: "foreman", mode: "discussion" });
  t.onEvent({ kind: "turn_started", agent: "scout", mode: "discussion" });
  t.onEvent({ kind: "turn_finished", status: "done" });
  assert.equal(t.current?.agent, "foreman");
  t.onEvent({ kind: "turn_finished", status: "done" });
  assert.equal(t.current, null);
  assert.equal(t.onEvent({ kind: "turn_finished", status: "done" }), false);
});
