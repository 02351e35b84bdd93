/**
 * What a tool call's card shows, from its arguments and result: an edit's line diff (the
 * `diff` library), the files a read, grep or glob names (links), a command's exit code. Pure
 * (no DOM, no `vscode`): the webview draws it, the tests check it under node.
 */

import { diffLines, parsePatch } from "diff";

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
        lines.push({ sign: " ", text: `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@` });
        for (const l of h.lines) {
          const sign = l[0] === "+" || l[0] === "-" ? (l[0] as "+" | "-") : " ";
          lines.push({ sign, text: l.slice(1) });
        }
      }
      return { path, line: Math.max(1, f.hunks[0].newStart), lines: lines.slice(0, MAX_DIFF_LINES) };
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
