/**
 * `ndomo/saveDocuments` (server → client request, `{uris}` → `{saved}`): before `bash` runs,
 * the server asks the editor to save the documents a turn edited, so a command sees the new
 * text while the edits stay in the editor's undo history. Pure apart from the injected
 * documents, so it is unit-tested.
 */

export const SAVE_DOCUMENTS = "ndomo/saveDocuments";

export interface OpenDocument {
  /** File-system path: URIs from the server and the editor may be spelled differently. */
  fsPath: string;
  isDirty: boolean;
  save(): PromiseLike<boolean>;
}

export interface SaveResult {
  saved: string[];
}

/**
 * Saves each named document that is open here. A URI is answered as saved when the editor
 * wrote it (or it had nothing unsaved, so the disk already holds its text); a document that
 * is not open, or whose save failed, is left out and the server writes it through itself.
 */
export async function saveDocuments(
  params: unknown,
  open: () => readonly OpenDocument[],
  fsPathOf: (uri: string) => string | undefined,
): Promise<SaveResult> {
  const raw = (params as { uris?: unknown } | null)?.uris;
  if (!Array.isArray(raw)) throw new Error(`${SAVE_DOCUMENTS}: params must be {"uris": [string]}`);
  const saved: string[] = [];
  for (const uri of raw) {
    if (typeof uri !== "string") continue;
    const path = fsPathOf(uri);
    const doc = path === undefined ? undefined : open().find((d) => d.fsPath === path);
    if (!doc) continue;
    try {
      if (!doc.isDirty || (await doc.save())) saved.push(uri);
    } catch {
      // not saved: the server falls back to writing the file
    }
  }
  return { saved };
}
