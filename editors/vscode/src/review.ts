/**
 * "ndomo: Review turn" and a turn's Review button: the turn's changes (its edits and its
 * commands' effects, `ndomo.review.show`) in VS Code's multi-file diff editor, then a
 * quick pick of every hunk, checked = kept; the unchecked ones go back (`ndomo.review.apply`).
 * A file changed since the review is refused by the server and named in the warning.
 */

import * as vscode from "vscode";
import type { Lsp } from "./commands";

/** The read-only left (checkpoint) side of each file's diff. */
export const REVIEW_SCHEME = "ndomo-review";

export interface ReviewHunk {
  id: string;
  old_start: number;
  old_lines: number;
  new_start: number;
  new_lines: number;
  removed: string[];
  added: string[];
}
export interface ReviewFile {
  path: string;
  status: string;
  hash: string;
  hunks: ReviewHunk[];
  original?: string | null;
}
export interface Review {
  turn_id: number | null;
  prompt?: string | null;
  files: ReviewFile[];
  message: string;
}

/** The quick pick's row of one hunk: "path:line −removed +added". Pure. */
export function hunkLabel(f: ReviewFile, h: ReviewHunk): string {
  if (f.status === "created") return `${f.path} (created, ${h.added.length} lines)`;
  if (f.status === "deleted") return `${f.path} (deleted, ${h.removed.length} lines)`;
  if (f.status === "binary") return `${f.path} (binary)`;
  return `${f.path}:${Math.max(h.new_start, 1)} −${h.removed.length} +${h.added.length}`;
}

/** The `ndomo.review.apply` arguments: every hunk not kept is rejected. Pure. */
export function applyArgs(review: Review, kept: Set<string>): Record<string, unknown> {
  const reject: string[] = [];
  const hashes: Record<string, string> = {};
  for (const f of review.files) {
    hashes[f.path] = f.hash;
    for (const h of f.hunks) if (!kept.has(h.id)) reject.push(h.id);
  }
  return { turn: review.turn_id, reject, hashes };
}

export class ReviewOriginals implements vscode.TextDocumentContentProvider {
  // set before the diff opens each document (and a review's texts never change)
  private texts = new Map<string, string>();

  uri(turn: number, path: string, side: "before" | "none"): vscode.Uri {
    return vscode.Uri.from({ scheme: REVIEW_SCHEME, path: `/${path}`, query: `turn=${turn}&side=${side}` });
  }

  set(uri: vscode.Uri, text: string): void {
    this.texts.set(uri.toString(), text);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }
}

type Pick = vscode.QuickPickItem & { id: string };

/** Ask which hunks stay: a multi-select quick pick, every hunk checked at first. */
function choose(review: Review): Promise<Set<string> | undefined> {
  const qp = vscode.window.createQuickPick<Pick>();
  qp.canSelectMany = true;
  qp.ignoreFocusOut = true;
  qp.title = `ndomo review: turn ${review.turn_id}`;
  qp.placeholder = "Checked hunks stay; uncheck the ones to put back, then Enter (Esc: change nothing)";
  const items: Pick[] = [];
  for (const f of review.files) {
    for (const h of f.hunks) {
      const first = h.added.find((l) => l.trim()) ?? h.removed.find((l) => l.trim()) ?? "";
      items.push({ label: hunkLabel(f, h), description: first.trim().slice(0, 80), id: h.id });
    }
  }
  qp.items = items;
  qp.selectedItems = items;
  return new Promise((resolve) => {
    let done = false;
    qp.onDidAccept(() => {
      done = true;
      const kept = new Set(qp.selectedItems.map((i) => i.id));
      qp.hide();
      resolve(kept);
    });
    qp.onDidHide(() => {
      qp.dispose();
      if (!done) resolve(undefined);
    });
    qp.show();
  });
}

/** Review turn `turn` (the session's last turn that changed files when undefined). */
export async function reviewTurn(lsp: Lsp, originals: ReviewOriginals, turn?: number, quiet = false): Promise<unknown> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) return undefined;
  const review = (await lsp.execute("ndomo.review.show", { ...(turn !== undefined ? { turn } : {}), texts: true })) as Review;
  if (!review || review.turn_id === null || !review.files?.length) {
    if (!quiet) vscode.window.showInformationMessage(`ndomo: ${review?.message ?? "nothing to review"}`);
    return undefined;
  }
  const id = review.turn_id;
  const changes: [vscode.Uri, vscode.Uri, vscode.Uri][] = review.files.map((f) => {
    const file = vscode.Uri.joinPath(folder.uri, f.path);
    const before = originals.uri(id, f.path, "before");
    originals.set(before, f.original ?? "");
    const after = f.status === "deleted" ? originals.uri(id, f.path, "none") : file;
    if (f.status === "deleted") originals.set(after, "");
    return [file, before, after];
  });
  await vscode.commands.executeCommand("vscode.changes", `ndomo review: turn ${id}`, changes);
  const kept = await choose(review);
  if (!kept) return undefined;
  const args = applyArgs(review, kept);
  if (!(args.reject as string[]).length) {
    vscode.window.showInformationMessage(`ndomo: turn ${id}: every change kept`);
    return { reverted: [] };
  }
  const res = (await lsp.execute("ndomo.review.apply", args)) as { message?: string; refused?: Record<string, string> };
  const msg = `ndomo: ${res?.message ?? "review applied"}`;
  if (res?.refused && Object.keys(res.refused).length) vscode.window.showWarningMessage(msg);
  else vscode.window.showInformationMessage(msg);
  return res;
}
