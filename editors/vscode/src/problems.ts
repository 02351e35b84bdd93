/**
 * `ndomo/diagnostics` (server → client request, `{uris}` → `{items: [{uri, diagnostics}]}`):
 * after an agent's edit, the server asks what the editor now shows for the edited files (the
 * other extensions' diagnostics: a type checker, a linter), and gives it to the model. Pure
 * apart from the injected lookup, so it is unit-tested.
 */

export const DIAGNOSTICS = "ndomo/diagnostics";
/** Per file: the model reads the worst first; a file with hundreds is cut here. */
export const MAX_PER_FILE = 50;

/** The parts of a `vscode.Diagnostic` that are read (severity: VS Code's, Error = 0). */
export interface EditorDiagnostic {
  message: string;
  source?: string;
  code?: string | number | { value: string | number };
  severity: number;
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
}

export interface LspDiagnostic {
  message: string;
  source?: string;
  code?: string | number;
  severity: number;
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
}

export interface DiagnosticsResult {
  items: { uri: string; diagnostics: LspDiagnostic[] }[];
}

function position(p: { line: number; character: number }) {
  return { line: p.line, character: p.character };
}

/** VS Code's diagnostic as LSP spells it (severity 1 error … 4 hint; a code's value). */
export function toLsp(d: EditorDiagnostic): LspDiagnostic {
  const code = typeof d.code === "object" && d.code !== null ? d.code.value : d.code;
  return {
    message: d.message,
    ...(d.source ? { source: d.source } : {}),
    ...(code !== undefined ? { code } : {}),
    severity: d.severity + 1,
    range: { start: position(d.range.start), end: position(d.range.end) },
  };
}

/** Answers the request from `diagnosticsOf(fsPath)` (`languages.getDiagnostics`), worst first. */
export function reportDiagnostics(
  params: unknown,
  diagnosticsOf: (uri: string) => readonly EditorDiagnostic[],
): DiagnosticsResult {
  const raw = (params as { uris?: unknown } | null)?.uris;
  if (!Array.isArray(raw)) throw new Error(`${DIAGNOSTICS}: params must be {"uris": [string]}`);
  const items = [];
  for (const uri of raw) {
    if (typeof uri !== "string") continue;
    const found = [...diagnosticsOf(uri)].sort((a, b) => a.severity - b.severity);
    items.push({ uri, diagnostics: found.slice(0, MAX_PER_FILE).map(toLsp) });
  }
  return { items };
}
