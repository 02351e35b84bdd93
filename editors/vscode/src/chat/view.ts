/**
 * The conversation view (activity bar → ndomo → Conversation): a webview view that streams
 * every turn this editor runs (the chat input's and the code actions'), shows each tool call
 * with its status and result, takes approvals inline, and stops a turn or one tool call.
 *
 * The extension keeps the state (`model.ts`) and posts it whole; the webview only draws it,
 * so a view that was hidden or reloaded is redrawn at once, and a fresh one loads the
 * session's stored history through `ndomo.session.open`.
 */

import * as nodePath from "node:path";

import * as vscode from "vscode";

import { catalog, rewind, type Context, type Lsp } from "../commands";
import { sessionAgents } from "../names";
import { diffSides, sameLeadingLines } from "./cards";
import { EditorMentions } from "./editorMentions";
import { chatHtml } from "./html";
import { linkTarget } from "./markdown";
import { MentionSource, resolveMentions, suggest, SymbolHit } from "./mentions";
import {
  addApproval,
  applyEvent,
  applyHistory,
  applyStatus,
  applyTurnResult,
  ApproveParams,
  BUSY_TEXT,
  callById,
  ChatState,
  emptyState,
  removeApproval,
  StatusInfo,
  welcomeFrom,
} from "./model";

export const VIEW_ID = "ndomo.chat";
/** The server's refusal of a second turn in a session (this process's or another's). */
const BUSY = /turn is already running/i;
/** The scheme of an edit's "before" text, the left side of its Open diff. */
export const BEFORE_SCHEME = "ndomo-before";

type FromWebview =
  | { type: "ready" }
  | { type: "send"; prompt: string }
  | { type: "mentions"; id: number; query: string }
  | { type: "cancel" }
  | { type: "cancelCall"; id: string }
  | { type: "setMode"; mode: string }
  | { type: "setAgent"; agent: string }
  | { type: "answer"; id: number; choice: string | null }
  | { type: "openLink"; href: string }
  | { type: "openFile"; path: string; line?: number; end?: number }
  | { type: "rewind"; turn: number }
  | { type: "review"; turn: number }
  | { type: "retry"; mode: string; prompt: string; agent?: string }
  | { type: "openEdit"; id: string }
  | { type: "openDiff"; id: string; file?: number }
  | { type: "copy"; text: string }
  | { type: "insert"; text: string };

export class ChatView {
  state: ChatState = emptyState();
  private view: any;
  private pending = new Map<number, (choice: string | null) => void>();
  private toasted = new Set<number>(); // questions shown as a notification too
  private loaded = false;
  /** The modes and agents advertised at initialize, when `ndomo.catalog` does not answer. */
  advertised: () => unknown = () => undefined;
  /** The palette's context (its quick picks and messages): a turn's Rewind button uses it. */
  commands: (() => Context) | undefined;
  /** The "before" texts Open diff showed, by URI (the provider below serves them). */
  private befores = new Map<string, string>();
  private beforeSeq = 0;
  readonly before: vscode.TextDocumentContentProvider = {
    provideTextDocumentContent: (uri: vscode.Uri) => this.befores.get(uri.toString()) ?? "",
  };

  constructor(
    private readonly dist: vscode.Uri, // the extension's dist/ folder (chat.js lives there)
    private readonly lsp: Lsp,
    private readonly notify: (message: string, choices: string[]) => Thenable<string | undefined> = (m, c) =>
      vscode.window.showInformationMessage(m, ...c),
    private readonly join: (base: vscode.Uri, name: string) => vscode.Uri = (b, n) => vscode.Uri.joinPath(b, n),
    private readonly mentions: MentionSource = new EditorMentions(),
  ) {}
  /** The symbols the picker offered, by name: what `@symbol:Name` means on send. */
  private symbols = new Map<string, SymbolHit>();

  // -- vscode.WebviewViewProvider ------------------------------------------------------------
  resolveWebviewView(view: any): void {
    this.view = view;
    view.webview.options = { enableScripts: true, localResourceRoots: [this.dist] };
    const script = view.webview.asWebviewUri(this.join(this.dist, "chat.js"));
    view.webview.html = chatHtml(view.webview.cspSource, String(script));
    view.webview.onDidReceiveMessage((m: FromWebview) => this.receive(m));
    view.onDidDispose?.(() => {
      if (this.view === view) this.view = undefined;
      this.toastPending();
    });
    view.onDidChangeVisibility?.(() => {
      if (!view.visible) this.toastPending();
      else this.unseen(0);
    });
    if (this.badged) this.unseen(0); // resolved anew as it shows again
  }

  // -- from the server -----------------------------------------------------------------------
  onEvent(event: unknown): void {
    const before = this.state.turns.length;
    applyEvent(this.state, event);
    // a new top-level turn while the view is off screen: one typed in the view cannot be,
    // so it is a code action's or another client's (the CLI's) and the view's badge says so
    if (this.state.turns.length > before && this.view && !this.view.visible) this.unseen(this.badged + 1);
    this.post();
  }

  /** Turns that arrived while the view was hidden: the view's badge (VS Code 1.72+). */
  private badged = 0;
  private unseen(count: number): void {
    this.badged = count;
    if (!this.view) return;
    // cleared with 0, not undefined: VS Code's webview view keeps a badge set back to
    // undefined on the activity bar (microsoft/vscode#331019); a 0 badge is not drawn
    this.view.badge = count
      ? { value: count, tooltip: count === 1 ? "1 new ndomo turn" : `${count} new ndomo turns` }
      : { value: 0, tooltip: "" };
  }

  onStatus(status: StatusInfo): void {
    if (!status || typeof status.session !== "string") return;
    const previous = this.state.session;
    applyStatus(this.state, status);
    this.post();
    if (previous && status?.session && previous !== status.session) {
      this.loaded = false; // another session became current: show its history
      void this.reload();
    }
  }

  /** `window/showMessageRequest` (approvals, ask_user): inline here when the view is on
   * screen, else (or once the view is hidden or closed) as a notification too; the first
   * answer wins. A notification cannot be closed by an extension, so none is shown while the
   * view shows the question: answering it there leaves no toast behind. */
  async ask(params: { message: string; actions?: { title: string }[] }): Promise<{ title: string } | null> {
    const choice = await this.question(params.message, (params.actions ?? []).map((a) => a.title));
    return choice ? { title: choice } : null;
  }

  /** `ndomo/approve`: an approval's parts, laid out in the view (reason, the command as code,
   * one primary action, the others in a menu, details behind a disclosure); the same rule for
   * the notification as `ask`, with the short text. The server sends how it was decided (a
   * `decision` event: the log's line, stored with the call). */
  async approve(params: ApproveParams): Promise<{ choice: string | null }> {
    const choices = (params.choices ?? []).map((c) => c.id);
    const choice = await this.question(String(params.message ?? ""), choices, params);
    return { choice };
  }

  private async question(message: string, choices: string[], parts?: ApproveParams): Promise<string | null> {
    const approval = addApproval(this.state, message, choices, parts);
    this.post();
    const answer = new Promise<string | null>((resolve) => this.pending.set(approval.id, resolve));
    if (!this.view?.visible) this.toast(approval.id);
    const choice = await answer;
    this.pending.delete(approval.id);
    this.toasted.delete(approval.id);
    removeApproval(this.state, approval.id);
    this.post();
    return choice;
  }

  /** A pending question as a notification (once); its answer, or its dismissal, answers it.
   * A structured approval's buttons are its labels; the answer is the option's id. */
  private toast(id: number): void {
    const a = this.state.approvals.find((x) => x.id === id);
    if (!a || this.toasted.has(id)) return;
    this.toasted.add(id);
    const options = a.parts?.choices;
    const labels = options ? options.map((o) => o.label) : a.choices;
    void Promise.resolve(this.notify(a.message, labels)).then((c) => {
      const choice = options ? (options.find((o) => o.label === c)?.id ?? null) : (c ?? null);
      this.pending.get(id)?.(choice);
    });
  }

  /** The view left the screen: its pending questions go to notifications. */
  private toastPending(): void {
    for (const a of this.state.approvals) this.toast(a.id);
  }

  // -- from the webview ----------------------------------------------------------------------
  async receive(m: FromWebview): Promise<void> {
    try {
      switch (m.type) {
        case "ready":
          await this.reload();
          return;
        case "send":
          return await this.send(m.prompt);
        case "retry": {
          // a call the mode refused: the mode that admits it, then the turn's prompt again
          if (this.state.status?.busy) return this.refuse(m.prompt);
          this.onStatus((await this.lsp.execute("ndomo.mode.set", { mode: m.mode })) as StatusInfo);
          const agent = m.agent && this.state.agents.includes(m.agent) && m.agent !== this.state.status?.agent ? m.agent : undefined;
          return await this.send(m.prompt, agent ? { agent } : {});
        }
        case "mentions": {
          // the picker's rows for what follows `@`; a failing provider offers nothing
          const items = await suggest(m.query, this.mentions, this.symbols).catch(() => []);
          void this.view?.webview.postMessage({ type: "mentions", id: m.id, items });
          return;
        }
        case "cancel":
          await this.lsp.execute("ndomo.cancel", {});
          return;
        case "cancelCall":
          await this.lsp.execute("ndomo.toolcall.cancel", { id: m.id });
          return;
        case "setMode":
          this.onStatus((await this.lsp.execute("ndomo.mode.set", { mode: m.mode })) as StatusInfo);
          return;
        case "setAgent":
          this.onStatus((await this.lsp.execute("ndomo.agent.set", { agent: m.agent })) as StatusInfo);
          return;
        case "answer":
          this.pending.get(m.id)?.(m.choice);
          return;
        case "openLink":
          await this.openLink(m.href);
          return;
        case "openFile":
          await this.openFile(m.path, m.line, m.end);
          return;
        case "rewind":
          if (this.commands && typeof m.turn === "number" && (await rewind(this.commands(), m.turn)) !== undefined) {
            await this.reload();
          }
          return;
        case "review": // review.ts, registered by extension.ts
          if (typeof m.turn === "number") await vscode.commands.executeCommand("ndomo.reviewTurn", m.turn);
          return;
        case "openEdit":
          await this.openEdit(m.id);
          return;
        case "openDiff":
          await this.openDiff(m.id, m.file);
          return;
        case "copy":
          await vscode.env.clipboard.writeText(String(m.text));
          return;
        case "insert":
          await this.insert(String(m.text));
          return;
      }
    } catch (err) {
      this.state.turns.push({
        id: null, prompt: m.type === "send" || m.type === "retry" ? m.prompt : m.type, agent: "", mode: "", status: "failed",
        error: err instanceof Error ? err.message : String(err), items: [],
      });
      this.post();
    }
  }

  /** A prompt from the box (or a retry) as a turn of this session. */
  private async send(text: string, extra: Record<string, unknown> = {}): Promise<void> {
    const prompt = text.trim();
    if (!prompt) return;
    if (this.state.status?.busy) return this.refuse(prompt);
    void this.view?.webview.postMessage({ type: "accepted", prompt }); // the box may clear
    let result: any;
    try {
      const mentions = await resolveMentions(prompt, this.mentions, this.symbols);
      result = await this.lsp.execute("ndomo.turn", { prompt, ...extra, ...(mentions.length ? { mentions } : {}) });
    } catch (err) {
      if (BUSY.test(err instanceof Error ? err.message : String(err))) return this.refuse(prompt);
      throw err;
    }
    // a turn started elsewhere (a code action, the CLI) between the status and the send
    if (result && (result.turn_id === null || result.turn_id === undefined) && BUSY.test(String(result.error ?? ""))) {
      return this.refuse(prompt);
    }
    applyTurnResult(this.state, prompt, result);
    this.post();
  }

  /** A send refused because a turn runs: the prompt goes back to the box, with a sentence
   * for the user (not a failed turn, not a command id). */
  private refuse(prompt: string): void {
    void this.view?.webview.postMessage({ type: "refused", prompt, message: BUSY_TEXT });
  }

  // -- links, files and code from the log -----------------------------------------------------

  /** A link in an answer: the web in the browser (after VS Code's own confirmation), a
   * workspace file in the editor; anything else (command:, javascript:, a path outside the
   * workspace) is not opened. The webview already dropped those: this checks again. */
  async openLink(href: string): Promise<void> {
    const target = linkTarget(String(href));
    if (!target) return;
    if (target.kind === "web") {
      await vscode.env.openExternal(vscode.Uri.parse(target.url, true));
      return;
    }
    await this.openFile(target.path, target.line);
  }

  /** A workspace file, absolute or relative to a workspace folder; null outside every folder. */
  fileUri(path: string): vscode.Uri | null {
    const folders = vscode.workspace.workspaceFolders ?? [];
    for (const f of folders) {
      const root = f.uri.fsPath;
      const abs = nodePath.isAbsolute(path) ? nodePath.normalize(path) : nodePath.resolve(root, path);
      const rel = nodePath.relative(root, abs);
      if (rel === "" || (!rel.startsWith("..") && !nodePath.isAbsolute(rel))) return vscode.Uri.file(abs);
    }
    return null;
  }

  /** A workspace file at a line, or with lines `line`–`end` selected (a code action's range). */
  async openFile(path: string, line?: number, end?: number): Promise<vscode.TextEditor | undefined> {
    const uri = this.fileUri(String(path));
    if (!uri) {
      void vscode.window.showWarningMessage(`ndomo: ${path} is not in the workspace; not opened.`);
      return undefined;
    }
    const at = Math.max(0, (Number(line) || 1) - 1);
    try {
      const doc = await vscode.workspace.openTextDocument(uri);
      const l = Math.min(at, Math.max(0, doc.lineCount - 1));
      const last = end && end - 1 > l ? Math.min(end - 1, doc.lineCount - 1) : -1;
      const selection = last > l ? new vscode.Range(l, 0, last, doc.lineAt(last).text.length) : new vscode.Range(l, 0, l, 0);
      return await vscode.window.showTextDocument(doc, { selection, preview: true });
    } catch (err) {
      void vscode.window.showWarningMessage(`ndomo: could not open ${path}: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
  }

  private editCall(id: string): { path: string; oldText: string; newText: string } | null {
    const c = callById(this.state, id);
    if (!c || typeof c.arguments.path !== "string") return null;
    const str = (v: unknown) => (typeof v === "string" ? v : "");
    return { path: c.arguments.path, oldText: str(c.arguments.old_text), newText: str(c.arguments.new_text) };
  }

  /** An edit's file at its changed line: where its new text is now (the first line that differs). */
  async openEdit(id: string): Promise<void> {
    const e = this.editCall(id);
    if (!e) return;
    const uri = this.fileUri(e.path);
    if (!uri) return void (await this.openFile(e.path));
    let line = 1;
    try {
      const text = (await vscode.workspace.openTextDocument(uri)).getText();
      const at = e.newText ? text.indexOf(e.newText) : -1;
      if (at >= 0) line = text.slice(0, at).split("\n").length + sameLeadingLines(e.oldText, e.newText);
    } catch {
      // opened at the top; openFile says why if it cannot open
    }
    await this.openFile(e.path, line);
  }

  /**
   * VS Code's diff editor for an edit: the file as it is now on the right; on the left the same
   * file with this edit taken back (its new_text, found once, replaced by its old_text). When
   * the new text is no longer in the file exactly once, the left and right are the edit's own
   * old_text and new_text.
   */
  async openDiff(id: string, file?: number): Promise<void> {
    if (typeof file === "number") return this.openFileDiff(id, file);
    const e = this.editCall(id);
    if (!e) return;
    const uri = this.fileUri(e.path);
    if (!uri) return void (await this.openFile(e.path));
    let right: vscode.Uri = uri;
    let before = e.oldText;
    try {
      const now = (await vscode.workspace.openTextDocument(uri)).getText();
      const at = e.newText ? now.indexOf(e.newText) : -1;
      if (at >= 0 && now.indexOf(e.newText, at + 1) < 0) before = now.slice(0, at) + e.oldText + now.slice(at + e.newText.length);
      else right = this.beforeUri(e.path, e.newText, "after");
    } catch {
      right = this.beforeUri(e.path, e.newText, "after");
    }
    const left = this.beforeUri(e.path, before, "before");
    await vscode.commands.executeCommand("vscode.diff", left, right, `${nodePath.basename(e.path)} (ndomo edit)`);
  }

  /**
   * VS Code's diff editor for one file a call changed (a write, a patch): the file as it is now
   * on the right and, on the left, the file with the call's diff taken back (empty for a new
   * file); when the file changed since (the diff no longer applies back), the diff's own old
   * and new lines.
   */
  async openFileDiff(id: string, index: number): Promise<void> {
    const c = callById(this.state, id);
    const f = c?.files?.[index];
    if (!c || !f) return;
    const uri = this.fileUri(f.path);
    let now: string | null = null;
    if (uri) {
      try {
        now = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
        const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
        if (open) now = open.getText(); // the editor's text, saved or not
      } catch {
        now = null; // gone (deleted, or moved away)
      }
    }
    const sides = diffSides(f, now);
    const right = sides.onDisk && uri ? uri : this.beforeUri(f.path, sides.after, "after");
    const left = this.beforeUri(f.path, sides.before, "before");
    const what = f.kind === "create" ? "new file" : f.kind === "delete" ? "deleted" : c.name;
    await vscode.commands.executeCommand("vscode.diff", left, right, `${nodePath.basename(f.path)} (ndomo ${what})`);
  }

  private beforeUri(path: string, text: string, side: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: BEFORE_SCHEME, path: "/" + path.replace(/^\/+/, ""), query: `${side}-${++this.beforeSeq}` });
    this.befores.set(uri.toString(), text);
    return uri;
  }

  /** A code block at the cursor of the active editor (replacing its selection). */
  async insert(text: string): Promise<void> {
    const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
    if (!editor) {
      void vscode.window.showWarningMessage("ndomo: no open editor to insert the code into.");
      return;
    }
    await editor.edit((b) => b.replace(editor.selection, text));
  }

  /** The session's stored conversation and the agents to pick from, once per view. */
  async load(): Promise<void> {
    if (this.loaded) return;
    const view = await this.lsp.execute("ndomo.session.open", {});
    const running = this.state.turns.filter((t) => t.status === "running");
    applyHistory(this.state, view);
    // a turn that started before the history came back: the live one (with what it streamed so
    // far) replaces its stored copy
    for (const t of running) {
      const at = t.id === null ? -1 : this.state.turns.findIndex((h) => h.id === t.id);
      if (at >= 0) this.state.turns[at] = t;
      else this.state.turns.push(t);
    }
    const names = await catalog({ lsp: this.lsp, advertised: this.advertised });
    this.state.modes = names.modes.map((m) => m.name);
    this.state.agents = sessionAgents(names).map((a) => a.name);
    this.loaded = true;
    if (!this.state.turns.length && !this.state.more) {
      // an empty session: the welcome, with the model and trust the server knows (the model
      // endpoint is not asked)
      const health = await this.lsp.execute("ndomo.health", { probe_model: false }).catch(() => null);
      this.state.welcome = welcomeFrom({ agents: sessionAgents(names), modes: names.modes }, health);
    }
  }

  /** Load the history if the view is open and the server answers (else on the next start). */
  async reload(): Promise<void> {
    if (!this.view) return;
    try {
      await this.load();
    } catch {
      // the server is not up yet: `reset()` loads it once it runs
    }
    this.post();
  }

  /** The server (re)started: read the session's history again. */
  reset(): void {
    this.loaded = false;
    this.state = emptyState();
    void this.reload();
  }

  private post(): void {
    if (!this.view) return;
    void this.view.webview.postMessage({ type: "state", state: this.state });
  }
}
