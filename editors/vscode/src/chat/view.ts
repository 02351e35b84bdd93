/**
 * The conversation view (activity bar → ndomo → Conversation): a webview view that streams
 * every turn this editor runs (the chat input's and the code actions'), shows each tool call
 * with its status and result, takes approvals inline, and stops a turn or one tool call.
 *
 * The extension keeps the state (`model.ts`) and posts it whole; the webview only draws it,
 * so a view that was hidden or reloaded is redrawn at once, and a fresh one loads the
 * session's stored history through `ndomo.session.open`.
 */

import * as vscode from "vscode";

import { catalog, type Lsp } from "../commands";
import { sessionAgents } from "../names";
import { EditorMentions } from "./editorMentions";
import { chatHtml } from "./html";
import { MentionSource, resolveMentions, suggest, SymbolHit } from "./mentions";
import {
  addApproval,
  applyEvent,
  applyHistory,
  applyStatus,
  applyTurnResult,
  ChatState,
  emptyState,
  removeApproval,
  StatusInfo,
} from "./model";

export const VIEW_ID = "ndomo.chat";

type FromWebview =
  | { type: "ready" }
  | { type: "send"; prompt: string }
  | { type: "mentions"; id: number; query: string }
  | { type: "cancel" }
  | { type: "cancelCall"; id: string }
  | { type: "setMode"; mode: string }
  | { type: "setAgent"; agent: string }
  | { type: "answer"; id: number; choice: string | null };

export class ChatView {
  state: ChatState = emptyState();
  private view: any;
  private pending = new Map<number, (choice: string | null) => void>();
  private loaded = false;
  /** The modes and agents advertised at initialize, when `ndomo.catalog` does not answer. */
  advertised: () => unknown = () => undefined;

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
    });
  }

  // -- from the server -----------------------------------------------------------------------
  onEvent(event: unknown): void {
    applyEvent(this.state, event);
    this.post();
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

  /** `window/showMessageRequest` (approvals, ask_user): inline here and as a notification;
   * the first answer wins (a later click on the other is ignored). */
  async ask(params: { message: string; actions?: { title: string }[] }): Promise<{ title: string } | null> {
    const choices = (params.actions ?? []).map((a) => a.title);
    const approval = addApproval(this.state, params.message, choices);
    this.post();
    const inline = new Promise<string | null>((resolve) => this.pending.set(approval.id, resolve));
    const popup = Promise.resolve(this.notify(params.message, choices)).then((c) => c ?? null);
    const choice = await Promise.race([inline, popup]);
    this.pending.delete(approval.id);
    removeApproval(this.state, approval.id);
    this.post();
    return choice ? { title: choice } : null;
  }

  // -- from the webview ----------------------------------------------------------------------
  async receive(m: FromWebview): Promise<void> {
    try {
      switch (m.type) {
        case "ready":
          await this.reload();
          return;
        case "send": {
          const prompt = m.prompt.trim();
          if (!prompt) return;
          const mentions = await resolveMentions(prompt, this.mentions, this.symbols);
          const result = await this.lsp.execute("ndomo.turn", mentions.length ? { prompt, mentions } : { prompt });
          applyTurnResult(this.state, prompt, result);
          this.post();
          return;
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
      }
    } catch (err) {
      this.state.turns.push({
        id: null, prompt: m.type === "send" ? m.prompt : m.type, agent: "", mode: "", status: "failed",
        error: err instanceof Error ? err.message : String(err), items: [],
      });
      this.post();
    }
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
