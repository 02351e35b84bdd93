/**
 * What a tool call's card shows, from its arguments and result: an edit's line diff (the
 * `diff` library), the files a read, grep or glob names (links), a command's exit code. Pure
 * (no DOM, no `vscode`): the webview draws it, the tests check it under node.
 */

import { applyPatch, diffLines, parsePatch, reversePatch } from "diff";

export type DiffLine = { sign: " " | "+" | "-"; text: string };

const CONTEXT = 2; // unchanged lines kept around a change
export const MAX_DIFF_LINES = 80; // a card stays compact; "Open diff" shows the rest

/** The line diff of `before` → `after`, unchanged runs cut to CONTEXT lines around changes. */
export function lineDiff(before: string, after: string): { lines: DiffLine[]; added: number; removed: number; cut: number } {
  const all: DiffLine[] = [];
  let added = 0;
  let removed = 0;
  for (const part of diffLines(before, after)) {
    const sign = part.added ? "+" : part.removed ? "-" : " ";
    const lines = part.value.replace(/\n$/, "").split("\n");
    if (sign === "+") added += lines.length;
    if (sign === "-") removed += lines.length;
    for (const text of lines) all.push({ sign, text });
  }
  const keep = all.map((l, i) => l.sign !== " " || all.slice(Math.max(0, i - CONTEXT), i + CONTEXT + 1).some((n) => n.sign !== " "));
  const lines: DiffLine[] = [];
  let skipped = false;
  all.forEach((l, i) => {
    if (keep[i]) {
      lines.push(l);
      skipped = false;
    } else if (!skipped) {
      lines.push({ sign: " ", text: "⋯" });
      skipped = true;
    }
  });
  const cut = Math.max(0, lines.length - MAX_DIFF_LINES);
  return { lines: lines.slice(0, MAX_DIFF_LINES), added, removed, cut };
}

/** How many leading lines `a` and `b` share: the changed line's offset inside an edit's new text. */
export function sameLeadingLines(a: string, b: string): number {
  const x = a.split("\n");
  const y = b.split("\n");
  let n = 0;
  while (n < x.length - 1 && n < y.length - 1 && x[n] === y[n]) n++;
  return n;
}

export interface PatchFile {
  path: string;
  line: number; // first line of its first hunk in the new file (1 for a new file)
  lines: DiffLine[];
  all: DiffLine[]; // every line, uncut
}

/** An `apply_patch` call's unified diff, per file (a diff that does not parse: none). */
export function patchFiles(patch: string): PatchFile[] {
  let parsed;
  try {
    parsed = parsePatch(patch);
  } catch {
    return [];
  }
  const strip = (p: string | undefined) => (p ?? "").replace(/^[ab]\//, "");
  return parsed
    .filter((f) => f.hunks.length)
    .map((f) => {
      const path = f.newFileName && f.newFileName !== "/dev/null" ? strip(f.newFileName) : strip(f.oldFileName);
      const lines: DiffLine[] = [];
      for (const h of f.hunks) {
        // jsdiff reads an empty side's start ("-0,0") as 1: the header shows it as written
        const at = (start: number, count: number) => `${count ? start : Math.max(0, start - 1)},${count}`;
        lines.push({ sign: " ", text: `@@ -${at(h.oldStart, h.oldLines)} +${at(h.newStart, h.newLines)} @@` });
        for (const l of h.lines) {
          const sign = l[0] === "+" || l[0] === "-" ? (l[0] as "+" | "-") : " ";
          lines.push({ sign, text: l.slice(1) });
        }
      }
      return { path, line: Math.max(1, f.hunks[0].newStart), lines: lines.slice(0, MAX_DIFF_LINES), all: lines };
    });
}

export interface FileHit {
  path: string;
  line?: number;
  text?: string;
}

/** `grep`'s result (a path line, then "  12: text" lines under it) as file and line links. */
export function grepHits(output: string): FileHit[] {
  const hits: FileHit[] = [];
  let current: string | null = null;
  for (const raw of output.split("\n")) {
    const m = /^\s+(\d+): ?(.*)$/.exec(raw);
    if (m && current) hits.push({ path: current, line: Number(m[1]), text: m[2] });
    else if (raw.trim() && !/^\s/.test(raw) && !raw.startsWith("…") && raw !== "no matches") current = raw.trim();
  }
  return hits;
}

/** `glob`'s result (one path a line) as file links. */
export function globHits(output: string): FileHit[] {
  return output
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("…") && l !== "no files match")
    .map((path) => ({ path }));
}

/** A command's exit code from its result's first line ("exit code: 2"), or null. */
export function exitCode(text: string): number | null {
  const m = /^exit code: (-?\d+)/m.exec(text);
  return m ? Number(m[1]) : null;
}

/** One file a call changed, as its `tool_finished` event (and the stored history) give it. */
export interface FileDiff {
  path: string;
  kind: "create" | "modify" | "delete" | "move";
  diff: string; // unified, with ---/+++ headers; cut when `cut`
  line: number; // first changed line in the new text
  cut?: boolean;
}

/** The server's per-file diffs of a call (anything else in the field: none). */
export function filesOf(raw: unknown): FileDiff[] {
  if (!Array.isArray(raw)) return [];
  return raw.filter((f) => f && typeof f.path === "string" && typeof f.diff === "string").map((f) => ({
    path: f.path, kind: f.kind, diff: f.diff, line: Number(f.line) || 1, cut: !!f.cut,
  }));
}

/** A file diff's lines for a card: its hunks (headers and all), at most MAX_DIFF_LINES. */
export function fileDiffLines(f: FileDiff): { lines: DiffLine[]; added: number; removed: number; cut: number } {
  const parsed = patchFiles(f.diff)[0];
  const all = parsed ? parsed.all : [];
  const added = all.filter((l) => l.sign === "+").length;
  const removed = all.filter((l) => l.sign === "-").length;
  return { lines: all.slice(0, MAX_DIFF_LINES), added, removed, cut: Math.max(0, all.length - MAX_DIFF_LINES) };
}

/**
 * The two sides of Open diff for a file a call changed: `now` is the file's text today (null:
 * it is gone). When the diff, taken back, applies to today's text, the left is the file before
 * the call and the right is the file itself (`onDisk`); otherwise (the file changed since, or
 * the diff was cut) the sides are the diff's own old and new lines.
 */
export function diffSides(f: FileDiff, now: string | null): { before: string; after: string; onDisk: boolean } {
  let parsed;
  try {
    parsed = parsePatch(f.diff)[0];
  } catch {
    parsed = undefined;
  }
  if (!parsed) return { before: "", after: "", onDisk: false };
  if (!f.cut && now !== null && f.kind !== "delete") {
    const before = applyPatch(now, reversePatch(parsed));
    if (typeof before === "string") return { before, after: now, onDisk: true };
  }
  const side = (keep: string) =>
    parsed.hunks.flatMap((h) => h.lines.filter((l) => l[0] === " " || l[0] === keep).map((l) => l.slice(1))).join("\n");
  return { before: f.kind === "create" ? "" : side("-"), after: f.kind === "delete" ? "" : side("+"), onDisk: false };
}
