/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * Runs inside the conversation webview (bundled to dist/chat.js): draws the state the
 * extension posts and sends back what the user does. No network, no remote resources.
 */

import { ChatState, describeOutcome, describeStatus, Item, TurnView } from "./model";
import { Picker } from "./picker";

declare function acquireVsCodeApi(): { postMessage(m: unknown): void };

const vscodeApi = acquireVsCodeApi();
const $ = (id: string) => document.getElementById(id)!;
let state: ChatState | null = null;
const open = new Set<string>(); // tool calls the user expanded

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

function drawItem(item: Item): HTMLElement {
  if (item.kind === "text") return el("div", "text", item.text);
  if (item.kind === "notice") return el("div", "notice", `${item.level}: ${item.text}`);
  const c = item.call;
  const d = el("details", `tool ${c.status}`) as HTMLDetailsElement;
  d.open = open.has(c.id) || c.status === "refused";
  d.addEventListener("toggle", () => (d.open ? open.add(c.id) : open.delete(c.id)));
  const s = el("summary");
  s.append(el("span", "name", `${c.name} `), el("span", "status", c.status === "running" ? "running…" : `${c.status}${c.summary ? ": " + c.summary : ""}`));
  if (c.status === "running") {
    const stop = button("stop", () => vscodeApi.postMessage({ type: "cancelCall", id: c.id }), "secondary");
    stop.title = "Stop this tool call; the turn goes on";
    stop.dataset.call = c.id;
    s.append(stop);
  }
  d.append(s, el("pre", "args", JSON.stringify(c.arguments, null, 2)));
  if (c.output) d.append(el("pre", "output", c.output));
  return d;
}

function drawTurn(t: TurnView): HTMLElement {
  const box = el("div", "turn");
  box.append(el("div", "prompt", t.prompt), el("div", "meta", `${t.agent} · ${t.mode}`));
  for (const item of t.items) box.append(drawItem(item));
  box.append(el("div", `outcome ${t.status}`, describeOutcome(t)));
  return box;
}

function fill(select: HTMLSelectElement, values: string[], current: string | undefined): void {
  const wanted = values.includes(current ?? "") || !current ? values : [...values, current];
  if (select.options.length !== wanted.length || [...select.options].some((o, i) => o.value !== wanted[i])) {
    select.replaceChildren(...wanted.map((v) => Object.assign(document.createElement("option"), { value: v, textContent: v })));
  }
  if (current) select.value = current;
}

function draw(): void {
  if (!state) return;
  $("head").textContent = describeStatus(state.status);
  const log = $("log");
  const atEnd = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  const turns = state.turns.map(drawTurn);
  if (state.more) turns.unshift(el("div", "meta", `${state.more} earlier turns (ndomo session export has them all)`));
  log.replaceChildren(...turns);
  if (atEnd) log.scrollTop = log.scrollHeight;
  const approvals = $("approvals");
  approvals.replaceChildren(
    ...state.approvals.map((a) => {
      const box = el("div", "approval");
      box.append(el("div", "", a.message));
      for (const c of a.choices) box.append(button(c, () => vscodeApi.postMessage({ type: "answer", id: a.id, choice: c })));
      return box;
    }),
  );
  fill($("mode") as HTMLSelectElement, state.modes, state.status?.mode);
  fill($("agent") as HTMLSelectElement, state.agents, state.status?.agent);
  ($("stop") as HTMLButtonElement).disabled = !state.status?.busy;
}

function send(): void {
  const input = $("prompt") as HTMLTextAreaElement;
  const prompt = input.value.trim();
  if (!prompt) return;
  input.value = "";
  picker.close();
  vscodeApi.postMessage({ type: "send", prompt });
}

const picker = new Picker($("prompt") as HTMLTextAreaElement, (m) => vscodeApi.postMessage(m));

window.addEventListener("message", (e: MessageEvent) => {
  if (e.data?.type === "mentions") picker.show(e.data.id, e.data.items ?? []);
  if (e.data?.type === "state") {
    state = e.data.state;
    draw();
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
