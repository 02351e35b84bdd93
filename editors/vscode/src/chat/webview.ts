/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * Runs inside the conversation webview (bundled to dist/chat.js): draws the state the
 * extension posts and sends back what the user does. No network, no remote resources.
 *
 * Drawing is incremental and once per animation frame: each turn and each of its items keeps
 * its element while its content is the same, so a streaming answer re-renders only its own
 * element and earlier turns are neither rebuilt nor re-laid out. Answers are markdown
 * (markdown.ts: no raw HTML, links opened by the extension); tool calls are cards (cards.ts).
 */

import { exitCode, FileHit, fileDiffLines, globHits, grepHits, lineDiff, patchFiles, type DiffLine, type FileDiff } from "./cards";
import { codeBar, highlight, renderMarkdown } from "./markdown";
import {
  Approval, BUSY_TEXT, ChatState, describeOutcome, describeSelection, describeStatus, EXAMPLE_PROMPTS, fenceRetry, Item, ToolCallView, TurnView, Welcome,
} from "./model";
import { Picker } from "./picker";

declare function acquireVsCodeApi(): { postMessage(m: unknown): void };

const vscodeApi = acquireVsCodeApi();
const $ = (id: string) => document.getElementById(id)!;
let state: ChatState | null = null;
const opened = new Map<string, boolean>(); // cards (and their output) the user opened or closed

function el(tag: string, cls?: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function button(label: string, onClick: () => void, cls?: string): HTMLButtonElement {
  const b = el("button", cls, label) as HTMLButtonElement;
  b.addEventListener("click", onClick);
  return b;
}

/** A link to a workspace file (and line); the extension opens it. */
function fileLink(path: string, line?: number, label?: string): HTMLElement {
  const a = el("a", "file", label ?? (line ? `${path}:${line}` : path));
  a.dataset.action = "openFile";
  a.dataset.path = path;
  if (line) a.dataset.line = String(line);
  a.tabIndex = 0;
  a.title = `Open ${path}${line ? ` at line ${line}` : ""}`;
  return a;
}

/** A code block as answers have them: highlighted, with Copy and Insert at cursor. */
function codeBlock(code: string, lang: string): HTMLElement {
  const box = el("div", "codeblock");
  // highlight() and codeBar() escape everything they are given
  box.innerHTML = `${codeBar(lang)}<pre><code class="hljs language-${lang}">${highlight(code, lang)}</code></pre>`;
  return box;
}

function diffBlock(lines: DiffLine[], cut = 0): HTMLElement {
  const pre = el("pre", "diff");
  for (const l of lines) pre.append(el("div", l.sign === "+" ? "add" : l.sign === "-" ? "del" : "ctx", `${l.sign} ${l.text}`));
  if (cut) pre.append(el("div", "ctx", `… ${cut} more lines (Open diff shows them all)`));
  return pre;
}

function hitList(hits: FileHit[]): HTMLElement {
  const list = el("div", "hits");
  for (const h of hits.slice(0, 200)) {
    const row = el("div", "hit");
    row.append(fileLink(h.path, h.line));
    if (h.text !== undefined) row.append(el("span", "hit-text", ` ${h.text}`));
    list.append(row);
  }
  if (hits.length > 200) list.append(el("div", "meta", `… ${hits.length - 200} more`));
  return list;
}

const str = (v: unknown) => (typeof v === "string" ? v : "");

/** What the card's summary names: the file or the command. */
function subject(c: ToolCallView): string {
  const a = c.arguments;
  if (c.name === "bash" || c.name === "serve") return str(a.command).split("\n")[0].slice(0, 80) || str(a.action);
  if (c.name === "grep" || c.name === "glob") return str(a.pattern);
  return str(a.path);
}

function cardBody(c: ToolCallView): HTMLElement[] {
  const a = c.arguments;
  const out = c.output;
  switch (c.name) {
    case "edit": {
      const d = lineDiff(str(a.old_text), str(a.new_text));
      const head = el("div", "cardhead");
      const link = el("a", "file", str(a.path));
      Object.assign(link.dataset, { action: "openEdit", call: c.id });
      link.tabIndex = 0;
      link.title = `Open ${str(a.path)} at the changed line`;
      head.append(link, el("span", "counts", ` +${d.added} −${d.removed} `));
      const open = el("button", "secondary", "Open diff");
      Object.assign(open.dataset, { action: "openDiff", call: c.id });
      head.append(open);
      return [head, diffBlock(d.lines, d.cut)];
    }
    case "write": {
      if (c.files?.length) return fileCards(c);
      const d = lineDiff("", str(a.content));
      const head = el("div", "cardhead");
      head.append(fileLink(str(a.path), 1, str(a.path)), el("span", "counts", ` ${d.added} lines written (the whole file)`));
      return [head, diffBlock(d.lines, d.cut)];
    }
    case "apply_patch": {
      if (c.files?.length) return fileCards(c);
      const files = patchFiles(str(a.patch));
      if (!files.length) return [el("pre", "args", str(a.patch))];
      return files.flatMap((f) => {
        const head = el("div", "cardhead");
        head.append(fileLink(f.path, f.line, f.path));
        return [head, diffBlock(f.lines)];
      });
    }
    case "read": {
      const from = Number(a.start_line) || undefined;
      const to = Number(a.end_line) || undefined;
      const label = `${str(a.path)}${from ? `:${from}${to ? `–${to}` : ""}` : ""}`;
      const parts = [fileLink(str(a.path), from, label)];
      if (out) parts.push(el("pre", "output", out));
      return parts;
    }
    case "grep":
    case "glob": {
      const hits = c.status === "done" ? (c.name === "grep" ? grepHits(out) : globHits(out)) : [];
      return hits.length ? [hitList(hits)] : out ? [el("pre", "output", out)] : [];
    }
    case "bash":
    case "serve": {
      const parts: HTMLElement[] = [];
      if (str(a.command)) parts.push(codeBlock(str(a.command), "bash"));
      else parts.push(el("pre", "args", JSON.stringify(a, null, 2)));
      const code = exitCode(c.summary) ?? exitCode(out);
      if (code !== null) parts.push(el("div", code === 0 ? "exit" : "exit bad", `exit code ${code}`));
      if (out) {
        const key = `${c.id}/output`;
        const box = el("details", "outbox") as HTMLDetailsElement;
        box.open = opened.get(key) ?? c.status === "running";
        const sum = el("summary", "", `output (${out.split("\n").length} lines)`);
        remember(sum, box, key);
        box.append(sum, el("pre", "output", out));
        parts.push(box);
      }
      return parts;
    }
    default: {
      const parts = [el("pre", "args", JSON.stringify(a, null, 2))];
      if (out) parts.push(el("pre", "output", out));
      return parts;
    }
  }
}

const KIND_WORDS: Record<FileDiff["kind"], string> = { create: "new file", modify: "", delete: "deleted", move: "moved here" };

/** A card per file a call changed (the server's diffs): the path at its first changed line,
 * new file / deleted, the counts, Open diff (VS Code's diff editor) and the hunks. */
function fileCards(c: ToolCallView): HTMLElement[] {
  return (c.files ?? []).flatMap((f, i) => {
    const d = fileDiffLines(f);
    const head = el("div", "cardhead");
    head.dataset.file = f.path;
    head.append(fileLink(f.path, f.kind === "delete" ? undefined : f.line, f.path));
    if (KIND_WORDS[f.kind]) head.append(el("span", `filekind ${f.kind}`, ` ${KIND_WORDS[f.kind]}`));
    head.append(el("span", "counts", ` +${d.added} −${d.removed} `));
    const open = el("button", "secondary", "Open diff");
    Object.assign(open.dataset, { action: "openDiff", call: c.id, file: String(i) });
    open.title = `Compare ${f.path} before and after this call`;
    head.append(open);
    const block = diffBlock(d.lines, d.cut);
    if (f.cut) block.append(el("div", "ctx", "… the rest of this diff was too long to keep"));
    return [head, block];
  });
}

/** The user's open or close of a card, noted at the click (before the element toggles), so a
 * redraw in the same frame keeps it; an element opened by default notes nothing. */
function remember(summary: HTMLElement, box: HTMLDetailsElement, key: string): void {
  summary.addEventListener("click", (e) => {
    if ((e.target as HTMLElement).closest("button, a")) return; // the stop button, a link
    opened.set(key, !box.open);
  });
}

const OPEN_BY_DEFAULT = new Set(["edit", "write", "apply_patch"]); // a diff is the point of the card

/** A call the mode refused, once its turn ended: one click sets the mode that admits the tool
 * and sends the turn's prompt again. */
function retryButton(c: ToolCallView, t: TurnView): HTMLElement | null {
  const mode = fenceRetry(c);
  if (!mode || t.status === "running" || !t.prompt || (state?.modes.length && !state.modes.includes(mode))) return null;
  const b = el("button", "retry", `Switch to ${mode} and retry`);
  Object.assign(b.dataset, { action: "retry", mode, prompt: t.prompt, agent: t.agent });
  b.title = `Set the session's mode to ${mode} and send this turn's prompt again`;
  return b;
}

function drawTool(c: ToolCallView, t: TurnView): HTMLElement {
  const d = el("details", `tool ${c.status}`) as HTMLDetailsElement;
  d.dataset.tool = c.name;
  d.open = opened.get(c.id) ?? (c.status === "refused" || c.status === "failed" || OPEN_BY_DEFAULT.has(c.name));
  const s = el("summary");
  remember(s, d, c.id);
  const what = subject(c);
  s.append(el("span", "name", `${c.name} `));
  if (what) s.append(el("span", "subject", `${what} `));
  s.append(el("span", "status", c.status === "running" ? "running…" : `${c.status}${c.summary ? ": " + c.summary : ""}`));
  if (c.sandbox) {
    // what the command ran in, as the server ran it (kept with the call: the same after a
    // reload); on the summary line, seen with the card closed
    const box = el("span", `sandbox${c.sandbox.startsWith("sandboxed") ? "" : " bad"}`, c.sandbox);
    box.title = "Where this command ran: the OS sandbox (bubblewrap) or not, and the network it could reach";
    s.append(box);
  }
  if (c.status === "running") {
    const stop = button("stop", () => vscodeApi.postMessage({ type: "cancelCall", id: c.id }), "secondary");
    stop.title = "Stop this tool call; the turn goes on";
    stop.dataset.call = c.id;
    s.append(stop);
  }
  d.append(s);
  const retry = retryButton(c, t);
  if (retry) d.append(retry);
  d.append(...cardBody(c));
  return d;
}

function drawItem(item: Item, t: TurnView): HTMLElement {
  if (item.kind === "text") {
    const div = el("div", "text markdown");
    div.innerHTML = renderMarkdown(item.text); // markdown-it with html off: the model's HTML is text
    return div;
  }
  if (item.kind === "notice") return el("div", "notice", `${item.level}: ${item.text}`);
  if (item.kind === "decision") return el("div", "decision", item.text);
  return drawTool(item.call, t);
}

// -- incremental drawing -------------------------------------------------------------------------

interface Drawn<T> {
  key: string; // the content it was drawn from
  el: HTMLElement;
  parts?: T;
}

interface TurnParts {
  prompt: HTMLElement;
  chip: HTMLElement;
  rewind: HTMLButtonElement;
  review: HTMLButtonElement;
  meta: HTMLElement;
  items: HTMLElement;
  outcome: HTMLElement;
  drawn: Drawn<never>[];
}

let drawnTurns: Drawn<TurnParts>[] = [];
let more: HTMLElement | null = null;

function turnBox(): Drawn<TurnParts> {
  const box = el("div", "turn");
  const rewind = el("button", "rewind") as HTMLButtonElement;
  rewind.textContent = "Rewind";
  rewind.title = "Go back to before this prompt: its files, its conversation or both";
  rewind.dataset.action = "rewind";
  const review = el("button", "rewind review") as HTMLButtonElement;
  review.textContent = "Review";
  review.title = "Review this turn's changes: a diff of every file it changed, then keep or put back each hunk";
  review.dataset.action = "review";
  const chip = el("div", "chip");
  chip.hidden = true;
  const parts: TurnParts = { prompt: el("div", "prompt"), chip, rewind, review, meta: el("div", "meta"), items: el("div", "items"), outcome: el("div", "outcome"), drawn: [] };
  box.append(parts.rewind, parts.review, parts.prompt, parts.chip, parts.meta, parts.items, parts.outcome);
  return { key: "", el: box, parts };
}

/** A code action's turn: the file and lines it is about (a link) and the selected text. */
function drawChip(chip: HTMLElement, t: TurnView): void {
  const s = t.selection;
  chip.hidden = !s;
  if (!s) return chip.replaceChildren();
  const d = describeSelection(s);
  const link = fileLink(s.path, s.start_line ?? undefined, d.place);
  if (s.end_line) link.dataset.end = String(s.end_line);
  const parts: HTMLElement[] = [link];
  if (d.text) parts.push(el("code", "selected", d.text));
  chip.replaceChildren(...parts);
}

/** Bring one turn's element up to date, touching only what changed. */
function updateTurn(d: Drawn<TurnParts>, t: TurnView): void {
  const p = d.parts!;
  const key = JSON.stringify([t.id, t.prompt, t.selection, t.agent, t.mode, t.status, t.error, t.items]);
  if (key === d.key) return;
  d.key = key;
  if (p.prompt.textContent !== t.prompt) p.prompt.textContent = t.prompt;
  drawChip(p.chip, t);
  // a stored turn of the user's (not a rewind, undo or review record, not running) can be rewound to
  const rewindable = typeof t.id === "number" && t.status !== "running" && t.agent !== "rewind" && t.agent !== "undo" && t.agent !== "review";
  p.rewind.hidden = !rewindable;
  p.rewind.dataset.turn = rewindable ? String(t.id) : "";
  p.review.hidden = !rewindable;
  p.review.dataset.turn = p.rewind.dataset.turn;
  const meta = `${t.agent} · ${t.mode}`;
  if (p.meta.textContent !== meta) p.meta.textContent = meta;
  const outcome = describeOutcome(t);
  if (p.outcome.textContent !== outcome) p.outcome.textContent = outcome;
  p.outcome.className = `outcome ${t.status}`;
  t.items.forEach((item, i) => {
    // a refused call's card changes when its turn ends (its retry button)
    const itemKey = JSON.stringify(item) + (item.kind === "tool" && item.call.status === "refused" ? t.status : "");
    const old = p.drawn[i];
    if (old && old.key === itemKey) return;
    const fresh = { key: itemKey, el: drawItem(item, t) };
    if (old) old.el.replaceWith(fresh.el);
    else p.items.append(fresh.el);
    p.drawn[i] = fresh;
  });
  for (const gone of p.drawn.splice(t.items.length)) gone.el.remove();
}

// -- the welcome panel (an empty session) -------------------------------------------------------

let welcome: { key: string; el: HTMLElement } | null = null;

function welcomePanel(w: Welcome): HTMLElement {
  const box = el("div", "welcome");
  box.append(el("h3", "", "Welcome to ndomo"));
  const facts = el("div", "facts");
  facts.append(el("div", "", `Model: ${w.model || "not configured (ndomo: Health says why)"}`));
  const trust =
    w.trust === "trusted" ? "trusted: its .ndomo/ agents, config and instructions apply"
    : w.trust === "untrusted" ? `not trusted: its own .ndomo/ setup is not loaded${w.trustNote ? ` (${w.trustNote})` : ""}`
    : w.trust || "unknown";
  facts.append(el("div", `trust ${w.trust}`, `This folder: ${trust}`));
  box.append(facts);
  const list = (title: string, rows: { name: string; description: string }[]) => {
    if (!rows.length) return;
    box.append(el("div", "welcome-title", title));
    const dl = el("dl");
    for (const r of rows) dl.append(el("dt", "", r.name), el("dd", "", r.description || "—"));
    box.append(dl);
  };
  list("Agents (who answers; pick one below)", w.agents);
  list("Modes (what they may do; pick one below)", w.modes);
  box.append(el("div", "welcome-title", "Try"));
  for (const p of EXAMPLE_PROMPTS) {
    const b = el("button", "example secondary", p);
    b.dataset.action = "example";
    b.title = "Put this prompt in the box";
    box.append(b);
  }
  return box;
}

function drawWelcome(s: ChatState, log: HTMLElement): void {
  const shown = !!s.welcome && !s.turns.length && !s.more;
  const key = shown ? JSON.stringify(s.welcome) : "";
  if (welcome && welcome.key === key) return;
  welcome?.el.remove();
  welcome = shown ? { key, el: welcomePanel(s.welcome!) } : null;
  if (welcome) log.prepend(welcome.el);
}

function drawLog(s: ChatState): void {
  const log = $("log");
  drawWelcome(s, log);
  const atEnd = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  // a session switch or a reload replaces the turns: start over when the first turn differs
  const first = s.turns[0];
  const firstDrawn = drawnTurns[0]?.parts?.prompt.dataset.turn;
  if (drawnTurns.length && (!first || firstDrawn !== `${first.id}:${first.prompt}`)) {
    for (const d of drawnTurns) d.el.remove();
    drawnTurns = [];
  }
  if (s.more && !more) {
    more = el("div", "meta more");
    log.prepend(more);
  }
  if (more) {
    if (s.more) more.textContent = `${s.more} earlier turns (ndomo session export has them all)`;
    else {
      more.remove();
      more = null;
    }
  }
  s.turns.forEach((t, i) => {
    let d = drawnTurns[i];
    if (!d) {
      d = turnBox();
      d.parts!.prompt.dataset.turn = `${t.id}:${t.prompt}`;
      drawnTurns[i] = d;
      log.append(d.el);
    }
    updateTurn(d, t);
  });
  for (const gone of drawnTurns.splice(s.turns.length)) gone.el.remove();
  if (atEnd) log.scrollTop = log.scrollHeight;
  else if (log.scrollHeight > height) showNewMessages(log); // grew out of sight
  height = log.scrollHeight;
  if (log.scrollHeight - log.scrollTop - log.clientHeight < 40) newMessages.hidden = true; // all in sight
}

// -- "↓ New messages": content arrived below the visible part of a log scrolled up ------------

let height = 0; // the log's height at the last draw
const newMessages = button("↓ New messages", () => {
  const log = $("log");
  log.scrollTop = log.scrollHeight;
  newMessages.hidden = true;
}, "newmessages");
newMessages.id = "newmessages";

/** The pill over the log's lower edge (fixed: the approvals and the send box vary in height). */
function showNewMessages(log: HTMLElement): void {
  newMessages.style.bottom = `${Math.max(0, window.innerHeight - log.getBoundingClientRect().bottom) + 8}px`;
  newMessages.hidden = false;
}
newMessages.hidden = true;
newMessages.title = "Scroll to the end of the conversation";
$("log").after(newMessages);
$("log").addEventListener("scroll", () => {
  const log = $("log");
  if (log.scrollHeight - log.scrollTop - log.clientHeight < 40) newMessages.hidden = true;
});

function fill(select: HTMLSelectElement, values: string[], current: string | undefined): void {
  const wanted = values.includes(current ?? "") || !current ? values : [...values, current];
  if (select.options.length !== wanted.length || [...select.options].some((o, i) => o.value !== wanted[i])) {
    select.replaceChildren(...wanted.map((v) => Object.assign(document.createElement("option"), { value: v, textContent: v })));
  }
  if (current) select.value = current;
}

let approvalsKey = "";

const answer = (id: number, choice: string) => vscodeApi.postMessage({ type: "answer", id, choice });

/** A question: a plain one as its text and buttons; an approval (`ndomo/approve`) as one line
 * of reason, the subject as code, the primary action, the others in a menu (each saying what it
 * saves) and the rule, sandbox, network and agent behind "Details". */
function drawApproval(a: Approval): HTMLElement {
  const box = el("div", "approval");
  const p = a.parts;
  if (!p) {
    box.append(el("div", "", a.message));
    for (const c of a.choices) box.append(button(c, () => answer(a.id, c)));
    return box;
  }
  box.classList.add("structured");
  box.dataset.permission = p.permission;
  if (p.reason) box.append(el("div", "reason", p.reason));
  box.append(el("div", "meta who", `${p.agent} wants ${p.permission}`));
  const shell = p.network !== null;
  box.append(shell ? codeBlock(p.subject, "bash") : el("pre", "subject", p.subject));
  const [primary, ...others] = p.choices;
  const actions = el("div", "actions");
  if (primary) {
    const b = button(primary.label, () => answer(a.id, primary.id), "primary");
    b.title = primary.detail;
    b.dataset.choice = primary.id;
    actions.append(b);
  }
  if (others.length) {
    const menu = el("select", "more") as HTMLSelectElement;
    menu.title = "Other answers";
    const head = Object.assign(document.createElement("option"), { value: "", textContent: "More…" });
    menu.append(head, ...others.map((o) => Object.assign(document.createElement("option"), { value: o.id, textContent: `${o.label}: ${o.detail}` })));
    menu.addEventListener("change", () => {
      if (menu.value) answer(a.id, menu.value);
    });
    actions.append(menu);
  }
  box.append(actions);
  const details = el("details", "approval-details") as HTMLDetailsElement;
  details.append(el("summary", "", "Details"));
  const facts: [string, string][] = [];
  if (p.rule) facts.push(["rule", `Always saves \`${p.rule}\``]);
  if (shell) {
    facts.push(["sandbox", p.sandbox || "unknown"]);
    facts.push(["network", p.destinations.length ? `reaching only ${p.destinations.join(", ")}` : p.network ? "yes, if allowed" : "none"]);
  }
  facts.push(["agent", `${p.agent} (${p.mode})`]);
  const list = el("dl");
  for (const [k, v] of facts) {
    const row = el("div", `fact ${k}`);
    row.append(el("dt", "", k), el("dd", "", v));
    list.append(row);
  }
  details.append(list);
  box.append(details);
  return box;
}

function draw(): void {
  if (!state) return;
  $("head").textContent = describeStatus(state.status);
  drawLog(state);
  const key = JSON.stringify(state.approvals);
  if (key !== approvalsKey) {
    approvalsKey = key;
    $("approvals").replaceChildren(...state.approvals.map(drawApproval));
  }
  fill($("mode") as HTMLSelectElement, state.modes, state.status?.mode);
  fill($("agent") as HTMLSelectElement, state.agents, state.status?.agent);
  const stop = $("stop") as HTMLButtonElement;
  stop.disabled = !state.status?.busy;
  stop.classList.toggle("running", !!state.status?.busy); // prominent while a turn runs
  stop.title = state.status?.busy ? "Stop the running turn" : "No turn is running";
  ($("send") as HTMLButtonElement).disabled = !!state.status?.busy;
  if (!state.status?.busy && $("note").textContent === BUSY_TEXT) $("note").textContent = "";
}

let frame = 0;

/** Draw once per animation frame, however many states arrived since the last one. */
function schedule(): void {
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    draw();
  });
}

// -- what the user does in the log ------------------------------------------------------------

/** Clicks on links and code-block buttons, by delegation (the CSP allows no inline handlers). */
function onLogClick(e: Event): void {
  const target = e.target as HTMLElement | null;
  const hit = target?.closest<HTMLElement>("a.link, [data-action]");
  if (!hit) return;
  e.preventDefault();
  if (hit.matches("a.link")) {
    vscodeApi.postMessage({ type: "openLink", href: hit.dataset.href ?? "" });
    return;
  }
  const action = hit.dataset.action;
  if (action === "copy" || action === "insert") {
    const code = hit.closest(".codeblock")?.querySelector("code")?.textContent ?? "";
    vscodeApi.postMessage({ type: action, text: code });
    if (action === "copy") {
      hit.textContent = "Copied";
      setTimeout(() => (hit.textContent = "Copy"), 1500);
    }
  } else if (action === "openFile") {
    const num = (v?: string) => (v ? Number(v) : undefined);
    vscodeApi.postMessage({ type: "openFile", path: hit.dataset.path ?? "", line: num(hit.dataset.line), end: num(hit.dataset.end) });
  } else if (action === "example") {
    const input = $("prompt") as HTMLTextAreaElement;
    input.value = hit.textContent ?? "";
    input.focus();
  } else if (action === "retry") {
    const { mode, prompt, agent } = hit.dataset;
    if (mode && prompt) vscodeApi.postMessage({ type: "retry", mode, prompt, agent: agent || undefined });
  } else if (action === "rewind") {
    if (hit.dataset.turn) vscodeApi.postMessage({ type: "rewind", turn: Number(hit.dataset.turn) });
  } else if (action === "review") {
    if (hit.dataset.turn) vscodeApi.postMessage({ type: "review", turn: Number(hit.dataset.turn) });
  } else if (action === "openEdit" || action === "openDiff") {
    const file = hit.dataset.file === undefined ? undefined : Number(hit.dataset.file);
    vscodeApi.postMessage({ type: action, id: hit.dataset.call ?? "", file });
  }
}

$("log").addEventListener("click", onLogClick);
$("approvals").addEventListener("click", onLogClick); // an approval's code block: Copy, Insert
$("log").addEventListener("keydown", (e: KeyboardEvent) => {
  if (e.key === "Enter" && (e.target as HTMLElement).matches?.("a")) onLogClick(e);
});

/** Send the box's prompt; the box clears only once the extension accepts it, and keeps the
 * text when a turn is running (Send is disabled then; Ctrl+Enter says why). */
function send(): void {
  const input = $("prompt") as HTMLTextAreaElement;
  const prompt = input.value.trim();
  if (!prompt) return;
  if (state?.status?.busy) {
    $("note").textContent = BUSY_TEXT;
    return;
  }
  $("note").textContent = "";
  picker.close();
  vscodeApi.postMessage({ type: "send", prompt });
}

const picker = new Picker($("prompt") as HTMLTextAreaElement, (m) => vscodeApi.postMessage(m));

window.addEventListener("message", (e: MessageEvent) => {
  const m = e.data;
  const input = $("prompt") as HTMLTextAreaElement;
  if (m?.type === "mentions") picker.show(m.id, m.items ?? []);
  if (m?.type === "state") {
    state = m.state;
    schedule();
  } else if (m?.type === "accepted") {
    if (input.value.trim() === m.prompt) input.value = "";
  } else if (m?.type === "refused") {
    if (!input.value.trim()) input.value = m.prompt; // never lost
    $("note").textContent = String(m.message ?? BUSY_TEXT);
  }
});
$("send").addEventListener("click", send);
$("stop").addEventListener("click", () => vscodeApi.postMessage({ type: "cancel" }));
$("prompt").addEventListener("keydown", (e: KeyboardEvent) => {
  if (picker.keydown(e)) return; // the mention picker's arrows, Enter/Tab, Escape
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    send();
  }
});
$("mode").addEventListener("change", (e) => vscodeApi.postMessage({ type: "setMode", mode: (e.target as HTMLSelectElement).value }));
$("agent").addEventListener("change", (e) => vscodeApi.postMessage({ type: "setAgent", agent: (e.target as HTMLSelectElement).value }));
vscodeApi.postMessage({ type: "ready" });
