/**
 * The editor's side of mentions (`mentions.ts`): the workspace's files (`findFiles`, without
 * .git, .ndomo and node_modules), the workspace symbols of its language features, the open
 * documents' unsaved text and the diagnostics VS Code shows (not ndomo's own).
 */

import * as path from "node:path";
import * as vscode from "vscode";

import type { LocatedProblem, MentionSource, Range, SymbolHit } from "./mentions";

const EXCLUDE = ["**/.git/**", "**/.ndomo/**", "**/node_modules/**"];

/** ndomo's exclusions and the user's `files.exclude` (an explicit glob replaces the setting). */
function exclude(): string {
  const user = vscode.workspace.getConfiguration("files").get<Record<string, unknown>>("exclude") ?? {};
  const globs = [...EXCLUDE, ...Object.keys(user).filter((g) => user[g] === true && !g.includes("{"))];
  return `{${globs.join(",")}}`;
}
const MAX_FILES = 5000;
const MAX_PROBLEMS = 500; // the worst first; the server takes up to 1000
const FILES_FRESH_MS = 5000; // one listing serves the keystrokes of one mention

function range(r: vscode.Range): Range {
  return { start: { line: r.start.line, character: r.start.character }, end: { line: r.end.line, character: r.end.character } };
}

export class EditorMentions implements MentionSource {
  private listed: { at: number; files: Promise<string[]> } | undefined;

  root(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  }

  files(): Promise<string[]> {
    if (!this.listed || Date.now() - this.listed.at > FILES_FRESH_MS) {
      const files = Promise.resolve(vscode.workspace.findFiles("**/*", exclude(), MAX_FILES)).then((uris) =>
        uris.map((u) => vscode.workspace.asRelativePath(u, false).split(path.sep).join("/")).sort(),
      );
      this.listed = { at: Date.now(), files };
    }
    return this.listed.files;
  }

  async symbols(query: string): Promise<SymbolHit[]> {
    const found = await vscode.commands.executeCommand<vscode.SymbolInformation[]>("vscode.executeWorkspaceSymbolProvider", query);
    return (found ?? [])
      .filter((s) => s.location?.uri?.scheme === "file")
      .map((s) => ({ name: s.name, path: s.location.uri.fsPath, range: range(s.location.range), container: s.containerName || undefined }));
  }

  async extent(hit: SymbolHit): Promise<Range> {
    const tree = await vscode.commands.executeCommand<(vscode.DocumentSymbol | vscode.SymbolInformation)[]>(
      "vscode.executeDocumentSymbolProvider", vscode.Uri.file(hit.path));
    const at = new vscode.Position(hit.range.start.line, hit.range.start.character);
    let best: vscode.Range | undefined;
    const walk = (list: (vscode.DocumentSymbol | vscode.SymbolInformation)[] | undefined) => {
      for (const d of list ?? []) {
        if ("selectionRange" in d && d.name === hit.name && d.range.contains(at)) best = d.range;
        if ("children" in d) walk(d.children);
      }
    };
    walk(tree);
    return best ? range(best) : hit.range;
  }

  unsaved(file: string): string | undefined {
    const wanted = path.resolve(file);
    return vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.isDirty && d.uri.fsPath === wanted)?.getText();
  }

  async exists(file: string): Promise<boolean> {
    try {
      const s = await vscode.workspace.fs.stat(vscode.Uri.file(path.resolve(file)));
      return (s.type & vscode.FileType.File) !== 0;
    } catch {
      return false;
    }
  }

  problems(): LocatedProblem[] {
    const out: LocatedProblem[] = [];
    for (const [uri, diagnostics] of vscode.languages.getDiagnostics()) {
      if (uri.scheme !== "file") continue;
      for (const d of diagnostics) {
        if (d.source === "ndomo") continue; // ndomo's own (plan tasks): the server knows them
        const code = typeof d.code === "object" && d.code !== null ? d.code.value : d.code;
        out.push({
          path: uri.fsPath, range: range(d.range), severity: d.severity + 1, message: d.message,
          ...(d.source ? { source: d.source } : {}), ...(code !== undefined ? { code } : {}),
        });
      }
    }
    return out.sort((a, b) => (a.severity ?? 4) - (b.severity ?? 4)).slice(0, MAX_PROBLEMS);
  }
}
