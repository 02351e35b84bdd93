// The conversation view's rendering rules under node: markdown without the model's own HTML,
// the link policy, highlighted code blocks, and the tool cards' diffs and file links.
import { strict as assert } from "node:assert";
import { test } from "node:test";

import { exitCode, globHits, grepHits, lineDiff, patchFiles, sameLeadingLines } from "../src/chat/cards";
import { linkTarget, renderMarkdown } from "../src/chat/markdown";
import { applyHistory, emptyState } from "../src/chat/model";

test("markdown renders; the model's raw HTML stays text", () => {
  const html = renderMarkdown("## Plan\n\n**add** `x`\n\n<img src=x onerror=alert(1)>\n\n<script>alert(2)</script> <b onclick=\"x()\">b</b>");
  assert.match(html, /<h2>Plan<\/h2>/);
  assert.match(html, /<strong>add<\/strong> <code>x<\/code>/);
  assert.doesNotMatch(html, /<img|<script|<b[ >]/);
  assert.match(html, /&lt;img src=x onerror=alert\(1\)&gt;/);
  assert.match(html, /&lt;script&gt;alert\(2\)&lt;\/script&gt;/);
});

test("links: only http(s) and workspace paths, carried in data-href, never href", () => {
  const html = renderMarkdown(
    "[web](https://example.com/a) [file](src/calc.py#L12) [cmd](command:workbench.action.terminal.new) " +
      "[js](javascript:alert(1)) [data](data:text/html,<b>x</b>) ![pic](https://example.com/p.png) https://example.org calc.py",
  );
  assert.doesNotMatch(html, /\shref=/);
  assert.match(html, /<a class="link" data-href="https:\/\/example.com\/a"[^>]*>web<\/a>/);
  assert.match(html, /<a class="link" data-href="src\/calc.py#L12"[^>]*>file<\/a>/);
  for (const bad of ["command:", "javascript:", "data:"]) assert.ok(!html.includes(`data-href="${bad}`), bad);
  assert.match(html, /\[image: pic\]/);
  assert.doesNotMatch(html, /<img/);
  assert.match(html, /data-href="https:\/\/example.org"/); // a written-out URL is linked
  assert.doesNotMatch(html, /data-href="http:\/\/calc.py"/); // a file name is not a domain
  assert.deepEqual(linkTarget("https://example.com/x"), { kind: "web", url: "https://example.com/x" });
  assert.deepEqual(linkTarget("calc.py:7"), { kind: "file", path: "calc.py", line: 7 });
  assert.deepEqual(linkTarget("file:///w/a%20b.py#L3"), { kind: "file", path: "/w/a b.py", line: 3 });
  for (const bad of ["command:ndomo.ask", "javascript:alert(1)", "vscode://x", "data:,x", "#top", "  "]) assert.equal(linkTarget(bad), null, bad);
});

test("a fenced block is highlighted, with Copy and Insert at cursor", () => {
  const html = renderMarkdown("```python\ndef add(a, b):\n    return a + b  # <b>\n```\n");
  assert.match(html, /<div class="codeblock"><div class="codebar"><span class="lang">python<\/span>/);
  assert.match(html, /data-action="copy"/);
  assert.match(html, /data-action="insert"/);
  assert.match(html, /<span class="hljs-keyword">def<\/span>/);
  assert.match(html, /&lt;b&gt;/);
  assert.doesNotMatch(html, /<b>/);
  const plain = renderMarkdown("```nosuchlang\n<x>\n```");
  assert.match(plain, /<code class="hljs language-nosuchlang">&lt;x&gt;/);
});

test("an edit's diff, a patch's files, grep and glob links, exit codes", () => {
  const d = lineDiff("a\nb\nc\nd\ne\nf\ng\n", "a\nb\nc\nD\ne\nf\ng\n");
  assert.equal(d.added, 1);
  assert.equal(d.removed, 1);
  assert.deepEqual(d.lines.map((l) => l.sign + l.text), [" ⋯", " b", " c", "-d", "+D", " e", " f", " ⋯"]);
  assert.equal(sameLeadingLines("x\ny\n", "x\nz\n"), 1);
  const files = patchFiles("--- a/calc.py\n+++ b/calc.py\n@@ -2,1 +2,1 @@\n-    return a - b\n+    return a + b\n");
  assert.equal(files[0].path, "calc.py");
  assert.equal(files[0].line, 2);
  assert.deepEqual(files[0].lines.slice(1).map((l) => l.sign), ["-", "+"]);
  assert.deepEqual(grepHits("calc.py\n  2: return a - b\n  5: x\nlib/u.py\n  1: y\n… (stopped at 3 matches)"), [
    { path: "calc.py", line: 2, text: "return a - b" },
    { path: "calc.py", line: 5, text: "x" },
    { path: "lib/u.py", line: 1, text: "y" },
  ]);
  assert.deepEqual(globHits("a.py\nb/c.py\n"), [{ path: "a.py" }, { path: "b/c.py" }]);
  assert.equal(exitCode("exit code: 2\nboom"), 2);
  assert.equal(exitCode("fine"), null);
});

test("a stored call keeps its status after a reload; one without a status is done or cancelled", () => {
  const s = emptyState();
  const call = (id: string, extra: object) => ({ kind: "tool", call_id: id, name: "bash", arguments: {}, ...extra });
  applyHistory(s, {
    session: "s", more: 0,
    turns: [{ id: 1, prompt: "p", status: "done", items: [
      call("r", { result: "not allowed", status: "refused" }),
      call("f", { result: "exit code: 1", status: "failed" }),
      call("d", { result: "ok" }),
      call("c", { result: null }),
    ] }],
  });
  const statuses = s.turns[0].items.map((i) => (i.kind === "tool" ? i.call.status : null));
  assert.deepEqual(statuses, ["refused", "failed", "done", "cancelled"]);
});

test("a send while a turn runs is refused with a sentence, the prompt handed back, no failed turn", async () => {
  const { ChatView } = await import("../src/chat/view");
  const calls: string[] = [];
  let serverBusy = false;
  const lsp = {
    async execute(command: string) {
      calls.push(command);
      if (command === "ndomo.turn" && serverBusy) {
        return { turn_id: null, status: "failed", error: "a turn is already running in this session; cancel it first (ndomo.cancel)" };
      }
      return command === "ndomo.turn" ? { turn_id: 3, status: "done" } : {};
    },
  };
  const chat = new ChatView("dist" as any, lsp, async () => undefined, (b: any, n) => `${b}/${n}` as any);
  const posted: any[] = [];
  let receive: (m: any) => Promise<void> = async () => {};
  chat.resolveWebviewView({
    webview: { options: {}, html: "", cspSource: "x", asWebviewUri: (u: any) => String(u),
      onDidReceiveMessage: (fn: any) => (receive = fn), postMessage: (m: any) => posted.push(m) },
  });
  chat.onStatus({ session: "s", mode: "m", agent: "a", busy: true, state: "", plan: null });
  await receive({ type: "send", prompt: "next step" });
  assert.deepEqual(calls, []); // not sent at all
  assert.deepEqual(posted.at(-1), { type: "refused", prompt: "next step", message: posted.at(-1).message });
  assert.doesNotMatch(posted.at(-1).message, /ndomo\./);
  chat.onStatus({ session: "s", mode: "m", agent: "a", busy: false, state: "", plan: null });
  serverBusy = true; // a turn from elsewhere started meanwhile: the server refuses
  await receive({ type: "send", prompt: "next step" });
  assert.deepEqual(calls, ["ndomo.turn"]);
  assert.equal(posted.at(-1).type, "refused");
  assert.equal(posted.filter((m) => m.type === "accepted").length, 1);
  assert.deepEqual(chat.state.turns, []);
});

test("a question shown in the visible view raises no notification; hiding the view raises one", async () => {
  const { ChatView } = await import("../src/chat/view");
  const toasts: string[] = [];
  let answerToast: (c: string | undefined) => void = () => {};
  const chat = new ChatView("dist" as any, { execute: async () => ({}) }, (m) => {
    toasts.push(m);
    return new Promise((r) => (answerToast = r));
  }, (b: any, n) => `${b}/${n}` as any);
  let visibility: () => void = () => {};
  let receive: (m: any) => Promise<void> = async () => {};
  const posted: any[] = [];
  const view = {
    visible: true,
    onDidChangeVisibility: (fn: () => void) => (visibility = fn),
    webview: { options: {}, html: "", cspSource: "x", asWebviewUri: (u: any) => String(u),
      onDidReceiveMessage: (fn: any) => (receive = fn), postMessage: (m: any) => posted.push(JSON.parse(JSON.stringify(m))) },
  };
  chat.resolveWebviewView(view);
  const first = chat.ask({ message: "run make?", actions: [{ title: "Once" }, { title: "Deny" }] });
  assert.deepEqual(toasts, []);
  const shown = posted.at(-1).state.approvals[0];
  await receive({ type: "answer", id: shown.id, choice: "Once" });
  assert.deepEqual(await first, { title: "Once" });
  assert.deepEqual(toasts, []); // answered in the view: no toast was ever shown
  const second = chat.ask({ message: "run it again?", actions: [{ title: "Deny" }] });
  view.visible = false;
  visibility();
  visibility(); // once per question
  assert.deepEqual(toasts, ["run it again?"]);
  answerToast("Deny");
  assert.deepEqual(await second, { title: "Deny" });
  assert.deepEqual(chat.state.approvals, []);
});

test("Open diff for a write or a patch: the file before the call, from today's text and the diff", async () => {
  const { diffSides, fileDiffLines, filesOf } = await import("../src/chat/cards");
  const made = filesOf([{ path: "new.txt", kind: "create", diff: "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n", line: 1 }, { nope: 1 }]);
  assert.equal(made.length, 1); // what is not a file diff is dropped
  assert.deepEqual(diffSides(made[0], "a\nb\n"), { before: "", after: "a\nb\n", onDisk: true }); // a new file
  const patched = filesOf([{ path: "calc.py", kind: "modify", line: 2, diff: "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n" }])[0];
  const now = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n";
  assert.deepEqual(diffSides(patched, now), { before: "def add(a, b):\n    return a - b\n\nprint(add(1, 2))\n", after: now, onDisk: true });
  // the file changed since (the new line is gone): the diff's own sides, not the disk
  const since = diffSides(patched, "something else\n");
  assert.equal(since.onDisk, false);
  assert.equal(since.before, "def add(a, b):\n    return a - b");
  assert.equal(since.after, "def add(a, b):\n    return a + b");
  const d = fileDiffLines(patched);
  assert.deepEqual([d.added, d.removed], [1, 1]);
  assert.deepEqual(d.lines.map((l) => l.sign + l.text), [" @@ -1,2 +1,2 @@", " def add(a, b):", "-    return a - b", "+    return a + b"]);
});

test("a new file's hunk header reads as written (-0,0)", async () => {
  const { fileDiffLines, filesOf } = await import("../src/chat/cards");
  const [made] = filesOf([{ path: "n.txt", kind: "create", diff: "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n", line: 1 }]);
  assert.equal(fileDiffLines(made).lines[0].text, "@@ -0,0 +1,2 @@");
});
