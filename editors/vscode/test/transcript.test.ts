import { strict as assert } from "node:assert";
import { test } from "node:test";

import { describeEvent } from "../src/transcript";

test("turn events read as a transcript", () => {
  assert.match(describeEvent({ kind: "turn_started", agent: "craftsman", mode: "autopilot", prompt: "fix" })!, /craftsman · autopilot: fix/);
  assert.equal(describeEvent({ kind: "text", text: "hi" }), "hi");
  assert.match(describeEvent({ kind: "tool_finished", name: "edit", status: "failed", summary: "no match" })!, /✗ edit: no match/);
  assert.match(describeEvent({ kind: "turn_finished", status: "failed", error: "boom" })!, /failed: boom/);
  assert.equal(describeEvent({ kind: "who-knows" }), null);
  assert.equal(describeEvent(null), null);
});
