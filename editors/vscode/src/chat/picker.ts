/// <reference lib="dom" />
/**
 * The send box's mention picker (runs in the webview): typing `@` asks the extension for
 * suggestions (files, @plan, @problems, symbols) and lists them above the box. Arrows move,
 * Enter or Tab picks, Escape closes; a click picks too. Picking writes `@word ` in place of
 * what was typed after the `@`.
 */

import { mentionAt, MentionItem } from "./mentions";

const DEBOUNCE_MS = 60;

export class Picker {
  private list: HTMLElement;
  private items: MentionItem[] = [];
  private selected = 0;
  private asked = 0; // the id of the latest query: older answers are dropped
  private at: { start: number; query: string } | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly input: HTMLTextAreaElement,
    private readonly post: (m: unknown) => void,
  ) {
    this.list = document.createElement("div");
    this.list.id = "mentions";
    this.list.className = "mentions";
    this.list.setAttribute("role", "listbox");
    this.list.hidden = true;
    input.before(this.list);
    input.addEventListener("input", () => this.update());
    input.addEventListener("click", () => this.update());
    input.addEventListener("keyup", (e) => {
      if (["ArrowLeft", "ArrowRight", "Home", "End"].includes(e.key)) this.update();
    });
    input.addEventListener("blur", () => setTimeout(() => this.close(), 150));
  }

  get open(): boolean {
    return !this.list.hidden;
  }

  /** The caret moved or the text changed: ask for the `@word` under the caret, or close.
   * Keys typed quickly ask once: the symbol providers answer the last word, not each letter. */
  update(): void {
    const at = mentionAt(this.input.value, this.input.selectionStart ?? this.input.value.length);
    this.at = at;
    clearTimeout(this.timer);
    if (!at) return this.close();
    const id = ++this.asked;
    this.timer = setTimeout(() => this.post({ type: "mentions", id, query: at.query }), DEBOUNCE_MS);
  }

  /** The extension's answer to a query. */
  show(id: number, items: MentionItem[]): void {
    if (id !== this.asked || !this.at) return;
    this.items = items;
    this.selected = 0;
    if (!items.length) return this.close();
    this.draw();
  }

  close(): void {
    this.list.hidden = true;
    this.list.replaceChildren();
    this.items = [];
  }

  /** A key in the send box; true when the picker took it. */
  keydown(e: KeyboardEvent): boolean {
    if (!this.open) return false;
    if (e.ctrlKey || e.metaKey || e.altKey) return false;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      const n = this.items.length;
      this.selected = (this.selected + (e.key === "ArrowDown" ? 1 : n - 1)) % n;
      this.draw();
    } else if (e.key === "Enter" || e.key === "Tab") {
      this.pick(this.selected);
    } else if (e.key === "Escape") {
      this.close();
    } else {
      return false;
    }
    e.preventDefault();
    e.stopPropagation();
    return true;
  }

  private pick(i: number): void {
    const item = this.items[i];
    const at = this.at;
    if (!item || !at) return this.close();
    const value = this.input.value;
    const end = at.start + 1 + at.query.length;
    const rest = value.slice(end);
    const word = `@${item.insert}${rest.startsWith(" ") ? "" : " "}`;
    this.input.value = value.slice(0, at.start) + word + rest;
    const caret = at.start + word.length;
    this.input.setSelectionRange(caret, caret);
    this.input.focus();
    this.close();
  }

  private draw(): void {
    const rows = this.items.map((item, i) => {
      const row = document.createElement("div");
      row.className = `mention ${item.kind}${i === this.selected ? " selected" : ""}`;
      row.setAttribute("role", "option");
      row.setAttribute("aria-selected", String(i === this.selected));
      const label = document.createElement("span");
      label.className = "label";
      label.textContent = item.label;
      row.append(label);
      if (item.detail) {
        const detail = document.createElement("span");
        detail.className = "detail";
        detail.textContent = ` ${item.detail}`;
        row.append(detail);
      }
      row.addEventListener("mousedown", (e) => {
        e.preventDefault(); // keep the focus in the send box
        this.pick(i);
      });
      return row;
    });
    this.list.replaceChildren(...rows);
    this.list.hidden = false;
    rows[this.selected]?.scrollIntoView({ block: "nearest" });
  }
}
