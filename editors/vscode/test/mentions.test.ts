// Mentions in the send box: the `@word` under the caret, fuzzy file ranking, the picker's
// suggestions and what a prompt's mentions resolve to (unsaved text first), and the view
// sending them with `ndomo.turn`.
import { strict as assert } from "node:assert";
import { test } from "node:test";

import { mentionAt, MentionSource, mentionWords, rankFiles, resolveMentions, suggest, SymbolHit } from "../src/chat/mentions";
import { ChatView } from "../src/chat/view";

const ROOT = "/ws";
const CIRCLE: SymbolHit = { name: "Circle", path: "/ws/shapes.ts", range: { start: { line: 3, character: 13 }, end: { line: 3, character: 19 } } };

function source(over: Partial<MentionSource> = {}): MentionSource & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    root: () => ROOT,
    files: async () => ["calc.py", "src/app.ts", "shapes.ts", "docs/notes.md"],
    symbols: async (q) => {
      asked.push(q);
      return "Circle".toLowerCase().includes(q.toLowerCase()) ? [CIRCLE] : [];
    },
    extent: async (h) => ({ start: { line: 3, character: 0 }, end: { line: 7, character: 1 } }),
    unsaved: (p) => (p === "/ws/calc.py" ? "unsaved text\n" : undefined),
    exists: async (p) => ["/ws/docs/notes.md", "/ws/calc.py"].includes(p),
    problems: () => [{ path: "/ws/a.json", range: { start: { line: 1, character: 0 }, end: { line: 1, character: 3 } }, severity: 1, message: "Expected comma", source: "json" }],
    ...over,
  };
}

test("the @word under the caret: after a space or at the start, never inside an address", () => {
  assert.deepEqual(mentionAt("fix @cal", 8), { start: 4, query: "cal" });
  assert.deepEqual(mentionAt("@", 1), { start: 0, query: "" });
  assert.deepEqual(mentionAt("(@plan", 6), { start: 1, query: "plan" });
  assert.equal(mentionAt("mail me@example", 15), null);
  assert.equal(mentionAt("fix @calc.py now", 16), null); // the caret left the word
  assert.deepEqual(mentionWords("fix @calc.py, @plan and me@x.org @symbol:Circle."), ["calc.py", "plan", "symbol:Circle"]);
});

test("files rank fuzzily: the name's letters in order, the file's own name first", () => {
  assert.deepEqual(rankFiles("shp", ["src/shapes.ts", "shapes.ts", "README.md"]), ["shapes.ts", "src/shapes.ts"]);
  assert.deepEqual(rankFiles("notes", ["docs/notes.md", "a/n/o/t/e/s.txt"])[0], "docs/notes.md");
  assert.deepEqual(rankFiles("zzz", ["calc.py"]), []);
});

test("suggestions: keywords, files, then symbols for a typed query; symbol: alone asks symbols only", async () => {
  const seen = new Map<string, SymbolHit>();
  const s = source();
  const all = await suggest("", s, seen);
  assert.deepEqual(all.slice(0, 2).map((i) => i.insert), ["plan", "problems"]);
  assert.ok(all.some((i) => i.kind === "file" && i.insert === "calc.py"));
  assert.deepEqual(s.asked, []); // no query: no symbol search
  const circ = await suggest("Circ", s, seen);
  assert.deepEqual(circ.map((i) => i.insert), ["symbol:Circle"]);
  assert.equal(circ[0].detail, "shapes.ts:4");
  const sh = await suggest("sh", s, seen);
  assert.deepEqual(sh.map((i) => i.kind), ["file"]); // shapes.ts; no symbol matches "sh"
  const only = await suggest("symbol:Ci", s, seen);
  assert.deepEqual(only.map((i) => i.kind), ["symbol"]);
  assert.deepEqual(s.asked, ["Circ", "sh", "Ci"]);
});

test("resolution: unsaved text wins, a word that names nothing stays text, a slash command has none", async () => {
  const seen = new Map<string, SymbolHit>([["Circle", CIRCLE]]);
  const s = source();
  const got = await resolveMentions("fix @calc.py with @symbol:Circle, @problems, @plan, @docs/notes.md and @decorator", s, seen);
  assert.deepEqual(got, [
    { kind: "file", path: "/ws/calc.py", text: "unsaved text\n" },
    { kind: "symbol", name: "Circle", path: "/ws/shapes.ts", range: { start: { line: 3, character: 0 }, end: { line: 7, character: 1 } } },
    { kind: "problems", items: s.problems() },
    { kind: "plan" },
    { kind: "file", path: "/ws/docs/notes.md" },
  ]);
  assert.deepEqual(await resolveMentions("/help @plan", s, seen), []);
  // a symbol the picker never offered is looked up by its exact name
  assert.equal((await resolveMentions("@symbol:Circle", s, new Map()))[0].kind, "symbol");
  assert.deepEqual(await resolveMentions("@symbol:Nothing", s, new Map()), []);
});

test("the view sends the resolved mentions with the turn and answers the picker's queries", async () => {
  const calls: [string, any][] = [];
  const lsp = { execute: async (c: string, a?: any) => (calls.push([c, a]), { status: "done", agent: "a", mode: "m" }) };
  const posted: any[] = [];
  const chat = new ChatView("dist" as any, lsp, async () => undefined, (b: any, n) => `${b}/${n}` as any, source());
  (chat as any).view = { webview: { postMessage: async (m: unknown) => posted.push(m) } };
  await chat.receive({ type: "mentions", id: 4, query: "calc" });
  const answer = posted.find((m) => m.type === "mentions");
  assert.equal(answer.id, 4);
  assert.equal(answer.items[0].insert, "calc.py");
  await chat.receive({ type: "send", prompt: "fix @calc.py" });
  assert.deepEqual(calls.at(-1), ["ndomo.turn", { prompt: "fix @calc.py", mentions: [{ kind: "file", path: "/ws/calc.py", text: "unsaved text\n" }] }]);
  await chat.receive({ type: "send", prompt: "no mentions here" });
  assert.deepEqual(calls.at(-1), ["ndomo.turn", { prompt: "no mentions here" }]);
});
