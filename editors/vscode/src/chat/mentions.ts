/**
 * Mentions in the conversation view's send box: `@calc.py` (a workspace file, fuzzy), `@plan`,
 * `@problems`, `@symbol:Name` (the editor's workspace symbols). The webview's picker asks for
 * suggestions as the user types after `@`; on send the extension resolves each mention for
 * `ndomo.turn` — an open file's unsaved text wins over the disk, `@problems` is what the editor
 * shows (ndomo's own diagnostics left out), a symbol is its declaration's location.
 *
 * Pure (no `vscode`, no DOM): the webview bundles it for `mentionAt`, the extension for the
 * rest, through a `MentionSource` that `editorMentions.ts` binds to the editor.
 */

export interface Position {
  line: number;
  character: number;
}
export interface Range {
  start: Position;
  end: Position;
}

/** One row of the picker. `insert` is the word after `@` that picking it writes. */
export interface MentionItem {
  kind: "file" | "symbol" | "plan" | "problems";
  label: string;
  detail?: string;
  insert: string;
}

export interface SymbolHit {
  name: string;
  path: string; // absolute
  range: Range;
  container?: string;
}

export interface LocatedProblem {
  path: string;
  range: Range;
  severity?: number; // LSP: 1 error … 4 hint
  message: string;
  source?: string;
  code?: string | number;
}

export type Mention =
  | { kind: "file"; path: string; text?: string }
  | { kind: "symbol"; name: string; path: string; range: Range; text?: string }
  | { kind: "problems"; items: LocatedProblem[] }
  | { kind: "plan" };

/** What the editor knows, for suggestions and resolution. */
export interface MentionSource {
  /** The workspace's files, relative to its root ('/'-separated). */
  files(): Promise<string[]>;
  symbols(query: string): Promise<SymbolHit[]>;
  /** The symbol's whole declaration (workspace symbols often give only its name). */
  extent(hit: SymbolHit): Promise<Range>;
  /** An open document's text when it has unsaved changes. */
  unsaved(path: string): string | undefined;
  exists(path: string): Promise<boolean>;
  problems(): LocatedProblem[];
  /** The workspace folder (absolute), or undefined when there is none. */
  root(): string | undefined;
}

export const KEYWORDS: MentionItem[] = [
  { kind: "plan", label: "@plan", detail: "the committed plan", insert: "plan" },
  { kind: "problems", label: "@problems", detail: "the problems the editor shows", insert: "problems" },
];
export const SYMBOL = "symbol:";

/** The `@word` the caret is in: where its `@` is and what follows it up to the caret. */
export function mentionAt(text: string, caret: number): { start: number; query: string } | null {
  const before = text.slice(0, caret);
  const m = /(^|[^\w@])@([^\s@]*)$/.exec(before);
  if (!m) return null;
  return { start: before.length - m[2].length - 1, query: m[2] };
}

/** A fuzzy match's score (higher is better), or null: every query character in order,
 * consecutive runs and matches in the file's name count more, shorter paths win ties. */
export function fuzzyScore(query: string, candidate: string): number | null {
  if (!query) return 0;
  const q = query.toLowerCase();
  const c = candidate.toLowerCase();
  const base = c.lastIndexOf("/") + 1;
  let score = 0;
  let at = -1;
  let run = 0;
  for (const ch of q) {
    const found = c.indexOf(ch, at + 1);
    if (found < 0) return null;
    run = found === at + 1 ? run + 1 : 1;
    score += run * 2 + (found >= base ? 3 : 0) + (found === base || /[/_.-]/.test(c[found - 1] ?? "/") ? 2 : 0);
    at = found;
  }
  return score - candidate.length / 100;
}

export function rankFiles(query: string, files: string[], limit = 50): string[] {
  const scored: [number, string][] = [];
  for (const f of files) {
    const s = fuzzyScore(query, f);
    if (s !== null) scored.push([s, f]);
  }
  scored.sort((a, b) => b[0] - a[0] || a[1].localeCompare(b[1]));
  return scored.slice(0, limit).map(([, f]) => f);
}

function relative(root: string | undefined, path: string): string {
  return root && path.startsWith(root + "/") ? path.slice(root.length + 1) : path;
}

/** The picker's rows for what follows `@`: the keywords, files by fuzzy rank, then symbols
 * (when a query is typed; `symbol:` asks symbols only). `seen` keeps the symbols for send. */
export async function suggest(query: string, source: MentionSource, seen: Map<string, SymbolHit>): Promise<MentionItem[]> {
  const items: MentionItem[] = [];
  const symbolOnly = query.startsWith(SYMBOL);
  if (!symbolOnly) {
    items.push(...KEYWORDS.filter((k) => k.insert.startsWith(query)));
    for (const f of rankFiles(query, await source.files())) items.push({ kind: "file", label: f, insert: f });
  }
  const symbolQuery = symbolOnly ? query.slice(SYMBOL.length) : query;
  if (symbolQuery) {
    const root = source.root();
    for (const s of (await source.symbols(symbolQuery)).slice(0, 30)) {
      seen.set(s.name, s);
      items.push({
        kind: "symbol",
        label: `${SYMBOL}${s.name}`,
        detail: `${s.container ? s.container + " · " : ""}${relative(root, s.path)}:${s.range.start.line + 1}`,
        insert: `${SYMBOL}${s.name}`,
      });
    }
  }
  return items;
}

/** The `@` words of a prompt, as the server reads them (an e-mail address is no mention). */
export function mentionWords(prompt: string): string[] {
  const words: string[] = [];
  for (const m of prompt.matchAll(/(?<![\w@])@([\w./~+-][^\s]*)/g)) {
    const w = m[1].replace(/[.,;:!?)]+$/, "");
    if (w && !words.includes(w)) words.push(w);
  }
  return words;
}

/** The prompt's mentions resolved for `ndomo.turn` (empty when it mentions nothing). */
export async function resolveMentions(prompt: string, source: MentionSource, seen: Map<string, SymbolHit>): Promise<Mention[]> {
  if (prompt.trimStart().startsWith("/")) return []; // a slash command's words are its arguments
  const out: Mention[] = [];
  const root = source.root();
  for (const word of mentionWords(prompt)) {
    if (word === "plan") {
      out.push({ kind: "plan" });
    } else if (word === "problems") {
      out.push({ kind: "problems", items: source.problems() });
    } else if (word.startsWith(SYMBOL)) {
      const name = word.slice(SYMBOL.length);
      const hit = seen.get(name) ?? (await source.symbols(name)).find((s) => s.name === name);
      if (!hit) continue; // names nothing the editor knows: plain text
      const text = source.unsaved(hit.path);
      out.push({ kind: "symbol", name, path: hit.path, range: await source.extent(hit), ...(text !== undefined ? { text } : {}) });
    } else {
      const path = word.startsWith("/") || !root ? word : `${root}/${word}`;
      const text = source.unsaved(path);
      if (text !== undefined) out.push({ kind: "file", path, text });
      else if (await source.exists(path)) out.push({ kind: "file", path });
    }
  }
  return out;
}
