/**
 * VS Code glue: starts `ndomo serve` through vscode-languageclient, binds the palette
 * commands from `commands.ts` and keeps the status-bar item in step with `ndomo/status`.
 * Questions (`window/showMessageRequest`) and approvals (`ndomo/approve`) go to the
 * conversation view (chat/view.ts), and to a notification while it is hidden. Code actions
 * and diagnostics need no code here: the language client shows them. Turn progress does: the client would put it in the status
 * bar, where it cannot be cancelled, so turns get a cancellable notification instead.
 */

import { accessSync, constants, statSync } from "node:fs";
import { homedir } from "node:os";

import * as vscode from "vscode";
import {
  CancellationToken,
  ExecuteCommandRequest,
  LanguageClient,
  ShowDocumentRequest,
  State,
  WorkDoneProgress,
  WorkDoneProgressCreateRequest,
} from "vscode-languageclient/node";
import type {
  ClientCapabilities,
  ConfigurationParams,
  ConfigurationRequest,
  ResponseError,
  FeatureState,
  LanguageClientOptions,
  ServerOptions,
  ShowDocumentParams,
  ShowDocumentResult,
  StaticFeature,
  WorkDoneProgressBegin,
  WorkDoneProgressEnd,
  WorkDoneProgressReport,
} from "vscode-languageclient/node";

import { Context, Lsp, PALETTE, PickItem, Selection, Ui } from "./commands";
import {
  affectsServer,
  commandKey,
  configurationAnswers,
  Inspect,
  ServerCommand,
  serverCommand,
  SETTINGS_SECTION,
  startFailure,
  startOptions,
  userOnly,
  Where,
  workspaceCommandQuestion,
  workspaceServerKeys,
} from "./config";
import { APPROVE } from "./chat/model";
import { SAVE_DOCUMENTS, saveDocuments } from "./save";
import { DIAGNOSTICS, reportDiagnostics } from "./problems";
import { formatStatus, parseStatus, pickStatus, StatusPayload } from "./status";
import { describeEvent } from "./transcript";
import { BEFORE_SCHEME, ChatView, VIEW_ID } from "./chat/view";
import { REVIEW_SCHEME, ReviewOriginals, reviewTurn } from "./review";
import { TurnTracker } from "./turns";
import { DONT_TRUST, MANAGE_TRUST_COMMAND, outcome, parseTrust, question, TRUST, TRUST_BOTH, TrustInfo } from "./trust";

let client: LanguageClient | undefined;
let lastStatus: StatusPayload | null = null;
/** The latest status of each workspace folder ("" for a server without folders), oldest first. */
const statuses = new Map<string, StatusPayload>();
/** Stops whatever the current session started (client, progress notifications). */
let stopCurrent: (() => Promise<void>) | undefined;

function settings(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration("ndomo");
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function where(): Where {
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === "file");
  return {
    folder: folder?.uri.fsPath,
    trusted: vscode.workspace.isTrusted,
    executable: isExecutable,
    windows: process.platform === "win32",
    home: homedir(),
  };
}

function currentCommand(): ServerCommand {
  const cfg = settings();
  return serverCommand((key) => cfg.get(key), where());
}

function settingLevels(): Inspect {
  const cfg = settings();
  return (key) => cfg.inspect(key);
}

/** The command line from the user's settings alone (the workspace's ndomo.server.* left out). */
function userCommand(): ServerCommand {
  return serverCommand(userOnly(settingLevels()), where());
}

/** The user's answers about workspace-chosen command lines (in the user's global state). */
const APPROVED_COMMANDS = "ndomo.approvedServerCommands";
const DECLINED_COMMANDS = "ndomo.declinedServerCommands";
const RUN_COMMAND = "Run it";
/** Folders (uris) where the user answered "Don't trust" in Restricted Mode. */
const DECLINED_TRUST = "ndomo.trustDeclined";

/** Tells the server this client answers `ndomo/saveDocuments`, `ndomo/diagnostics` and
 * `ndomo/approve` (approvals laid out in the conversation view). */
const saveDocumentsCapability: StaticFeature = {
  fillClientCapabilities(caps: ClientCapabilities): void {
    const experimental = (caps.experimental ?? {}) as Record<string, unknown>;
    const own = (experimental.ndomo ?? {}) as Record<string, unknown>;
    caps.experimental = { ...experimental, ndomo: { ...own, saveDocuments: true, diagnostics: true, approvals: true } };
  },
  initialize(): void {},
  getState(): FeatureState {
    return { kind: "static" };
  },
  clear(): void {},
};

/**
 * `window/showDocument` without focus (the turn's transcript, a plan view) opens beside the
 * file being edited instead of replacing it, and leaves the cursor where it was.
 */
async function showDocumentBeside(
  params: ShowDocumentParams,
  next: ShowDocumentRequest.HandlerSignature,
): Promise<ShowDocumentResult> {
  if (params.external === true || params.takeFocus === true) {
    return (await next(params, CancellationToken.None)) as ShowDocumentResult;
  }
  try {
    const uri = vscode.Uri.parse(params.uri);
    if (vscode.window.visibleTextEditors.some((e) => e.document.uri.toString() === uri.toString())) {
      return { success: true };
    }
    const doc = await vscode.workspace.openTextDocument(uri);
    const s = params.selection;
    await vscode.window.showTextDocument(doc, {
      // beside the file being edited; with none open, where it would go anyway (no empty group)
      viewColumn: vscode.window.activeTextEditor ? vscode.ViewColumn.Beside : vscode.ViewColumn.Active,
      preserveFocus: true,
      preview: false,
      selection: s ? new vscode.Range(s.start.line, s.start.character, s.end.line, s.end.character) : undefined,
    });
    return { success: true };
  } catch {
    return { success: false };
  }
}

/** The server's `workspace/configuration` pull: `ndomo` in the config.yaml shape, per folder. */
async function answerConfiguration(
  params: ConfigurationParams,
  token: CancellationToken,
  next: ConfigurationRequest.HandlerSignature,
): Promise<unknown[] | ResponseError<void>> {
  const answers = await next(params, token);
  if (!Array.isArray(answers)) return answers;
  return configurationAnswers(params.items, answers, (scopeUri) => {
    const cfg = vscode.workspace.getConfiguration(SETTINGS_SECTION, scopeUri ? vscode.Uri.parse(scopeUri) : undefined);
    return (key) => cfg.get(key);
  });
}

function createClient(output: vscode.OutputChannel, cmd: ServerCommand): LanguageClient {
  const cfg = settings();
  // Restricted Mode: the server runs every folder untrusted (workspaceTrusted: false)
  const serverOptions: ServerOptions = {
    command: cmd.command,
    args: cmd.args,
    options: { env: { ...process.env, ...cmd.env } },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
    initializationOptions: startOptions((key) => cfg.get(key), vscode.workspace.isTrusted),
    outputChannel: output,
    // Setting changes go to the running server (workspace/didChangeConfiguration); it pulls
    // each folder's `ndomo` section, answered in the config.yaml shape.
    synchronize: { configurationSection: SETTINGS_SECTION },
    middleware: {
      window: { showDocument: showDocumentBeside },
      workspace: { configuration: answerConfiguration },
    },
  };
  const c = new LanguageClient("ndomo", "ndomo", serverOptions, clientOptions);
  c.registerFeature(saveDocumentsCapability);
  return c;
}

function selectionOf(editor: vscode.TextEditor | undefined): Selection | undefined {
  if (!editor) return undefined;
  const s = editor.selection;
  return {
    uri: editor.document.uri.toString(),
    range: {
      start: { line: s.start.line, character: s.start.character },
      end: { line: s.end.line, character: s.end.character },
    },
    empty: s.isEmpty,
  };
}

function makeUi(output: vscode.OutputChannel): Ui {
  return {
    selection: () => selectionOf(vscode.window.activeTextEditor),
    input: (prompt, placeHolder) => Promise.resolve(vscode.window.showInputBox({ prompt, placeHolder, ignoreFocusOut: true })),
    pick: (items: PickItem[], placeHolder: string) => Promise.resolve(vscode.window.showQuickPick(items, { placeHolder })),
    info: (message) => void vscode.window.showInformationMessage(message),
    error: (message) => void vscode.window.showErrorMessage(message),
    show: (title, body) => {
      output.appendLine(`── ${title} ──`);
      output.appendLine(body);
      output.show(true);
    },
  };
}

function makeLsp(): Lsp {
  return {
    async execute(command, args = {}) {
      if (!client || client.state !== State.Running) {
        throw new Error("the ndomo server is not running (see the 'ndomo' output)");
      }
      return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [args] });
    },
  };
}

/** Open file documents, for `ndomo/saveDocuments`. */
function openFiles() {
  return vscode.workspace.textDocuments
    .filter((d) => d.uri.scheme === "file")
    .map((d) => ({ fsPath: d.uri.fsPath, isDirty: d.isDirty, save: () => d.save() }));
}

type ProgressValue = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;

/**
 * One turn's `$/progress` as a notification with a Cancel button (Cancel → `ndomo.cancel`).
 * vscode-languageclient 9 would show server progress in the status bar only, not cancellable.
 */
function showTurnProgress(c: LanguageClient, token: string | number, cancel: () => void): () => void {
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  let report: ((v: { message?: string; increment?: number }) => void) | undefined;
  let last = 0;
  const pending: ProgressValue[] = [];
  const done = () => {
    sub.dispose();
    finish();
  };
  const apply = (v: ProgressValue) => {
    if (!report || v.kind === "end") return;
    const step: { message?: string; increment?: number } = { message: v.message };
    if (typeof v.percentage === "number") {
      step.increment = Math.max(0, v.percentage - last);
      last = Math.max(last, v.percentage);
    }
    report(step);
  };
  const sub = c.onProgress(WorkDoneProgress.type, token, (value: ProgressValue) => {
    if (value.kind === "begin") {
      void vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `ndomo: ${value.title}`, cancellable: value.cancellable !== false },
        (progress, cancelToken) => {
          report = (v) => progress.report(v);
          cancelToken.onCancellationRequested(cancel);
          apply(value);
          for (const v of pending.splice(0)) apply(v);
          return finished;
        },
      );
    } else if (value.kind === "end") {
      done();
    } else if (report) {
      apply(value);
    } else {
      pending.push(value);
    }
  });
  return done;
}

function activeUri(): string | undefined {
  return vscode.window.activeTextEditor?.document.uri.toString();
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  statuses.clear();
  const output = vscode.window.createOutputChannel("ndomo");
  const transcript = vscode.window.createOutputChannel("ndomo transcript");
  const item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 100);
  item.command = "ndomo.statusMenu";
  const turns = new TurnTracker();
  let connected = true;
  const render = () => {
    const view = formatStatus(lastStatus, connected, turns.current);
    item.text = view.text;
    item.tooltip = view.tooltip;
  };
  render();
  item.show();
  context.subscriptions.push(output, transcript, item);

  const ui = makeUi(output);
  const lsp = makeLsp();
  const ctx: Context = {
    lsp,
    ui,
    status: () => lastStatus,
    // the modes and agents of `experimental.ndomo` (commands.ts asks ndomo.catalog first)
    advertised: () => (client?.initializeResult?.capabilities?.experimental as { ndomo?: unknown } | undefined)?.ndomo,
  };
  const chat = new ChatView(vscode.Uri.joinPath(context.extensionUri, "dist"), lsp);
  const originals = new ReviewOriginals();
  chat.advertised = ctx.advertised!;
  chat.commands = () => ctx;
  context.subscriptions.push(
    vscode.window.registerWebviewViewProvider(VIEW_ID, chat, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, chat.before),
    vscode.workspace.registerTextDocumentContentProvider(REVIEW_SCHEME, originals),
    // the palette's "Review turn" and a turn's Review button in the chat view (its turn id)
    vscode.commands.registerCommand("ndomo.reviewTurn", async (turn?: unknown) => {
      try {
        return await reviewTurn(lsp, originals, typeof turn === "number" ? turn : undefined);
      } catch (err) {
        ui.error(`ndomo: ${err instanceof Error ? err.message : String(err)}`);
        return undefined;
      }
    }),
  );

  for (const cmd of PALETTE) {
    context.subscriptions.push(
      vscode.commands.registerCommand(cmd.id, async () => {
        try {
          return await cmd.run(ctx);
        } catch (err) {
          ui.error(`ndomo: ${err instanceof Error ? err.message : String(err)}`);
          return undefined;
        }
      }),
    );
  }

  const cancelTurn = () => {
    const session = turns.current?.session;
    lsp.execute("ndomo.cancel", session ? { session } : {}).catch((err) => output.appendLine(`cancel failed: ${String(err)}`));
  };

  /**
   * The command line to start: a workspace's own ndomo.server.* runs only once the user
   * approved that exact line (remembered in the user's global state); declined, the user's
   * settings alone decide. `ask: false` uses what was answered before without asking.
   */
  const chooseCommand = async (ask: boolean): Promise<ServerCommand | null> => {
    const cmd = currentCommand();
    // In Restricted Mode VS Code already ignores the workspace's (restricted) server settings.
    const keys = vscode.workspace.isTrusted ? workspaceServerKeys(settingLevels()) : [];
    if (keys.length === 0) return cmd;
    const key = commandKey(cmd);
    if (context.globalState.get<string[]>(APPROVED_COMMANDS, []).includes(key)) return cmd;
    const declined = context.workspaceState.get<string[]>(DECLINED_COMMANDS, []);
    if (!ask && declined.includes(key)) return null;
    const q = workspaceCommandQuestion(cmd, keys);
    const answer = await vscode.window.showWarningMessage(q.message, { modal: true, detail: q.detail }, RUN_COMMAND);
    if (answer === RUN_COMMAND) {
      await context.globalState.update(APPROVED_COMMANDS, [...context.globalState.get<string[]>(APPROVED_COMMANDS, []), key]);
      return cmd;
    }
    if (!declined.includes(key)) await context.workspaceState.update(DECLINED_COMMANDS, [...declined, key]);
    output.appendLine(`not running the workspace's server command (${[cmd.command, ...cmd.args].join(" ")}): not approved`);
    return null;
  };

  /** Folders whose "Trust in VS Code and ndomo" waits for VS Code's trust (uri, "" without one). */
  const grantPending = new Set<string>();

  const setTrust = async (uri: string | undefined, trusted: boolean) => {
    await lsp.execute("ndomo.trust.set", { trusted, ...(uri ? { uri } : {}) });
    output.appendLine(`folder trust: ${uri ?? "(no folder)"} ${trusted ? "trusted" : "not trusted"}`);
  };

  /** Restricted Mode: trusting in ndomo waits until VS Code trusts the workspace too. */
  const grantInVsCode = async (uri: string | undefined) => {
    grantPending.add(uri ?? "");
    await vscode.commands.executeCommand(MANAGE_TRUST_COMMAND);
  };

  const answerTrust = async (uri: string | undefined, answer: string | undefined, restricted: boolean) => {
    const o = outcome(answer);
    if (o.kind === "grantVsCode") return grantInVsCode(uri);
    if (o.kind !== "set") return;
    if (restricted && !o.trusted) {
      const declined = context.workspaceState.get<string[]>(DECLINED_TRUST, []);
      await context.workspaceState.update(DECLINED_TRUST, [...declined, uri ?? ""]);
    }
    await setTrust(uri, o.trusted);
  };

  /**
   * After a start: each folder's trust. Asked once, when the server does not know the folder
   * yet and it configures something; in Restricted Mode the question offers VS Code's trust
   * too. A folder the user trusted in both waits here for VS Code's grant, then is recorded.
   */
  const checkTrust = async () => {
    const restricted = !vscode.workspace.isTrusted;
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.toString());
    for (const uri of folders.length ? folders : [undefined]) {
      let info: TrustInfo | null;
      try {
        info = parseTrust(await lsp.execute("ndomo.trust.get", uri ? { uri } : {}));
      } catch (err) {
        output.appendLine(`folder trust unknown (${err instanceof Error ? err.message : String(err)})`);
        continue;
      }
      if (!info) continue;
      if (!restricted && grantPending.delete(uri ?? "")) {
        await setTrust(uri, true);
        continue;
      }
      const declined = context.workspaceState.get<string[]>(DECLINED_TRUST, []).includes(uri ?? "");
      const q = question(info, restricted, declined);
      if (!q) continue;
      const answer = await vscode.window.showWarningMessage(q.message, { modal: true, detail: q.detail }, ...q.buttons);
      await answerTrust(uri, answer, restricted);
    }
  };

  /** "ndomo: Folder trust…": trust or stop trusting the active editor's folder. */
  const folderTrust = async () => {
    const active = vscode.window.activeTextEditor?.document.uri;
    const folder = (active && vscode.workspace.getWorkspaceFolder?.(active)) || vscode.workspace.workspaceFolders?.[0];
    const uri = folder?.uri.scheme === "file" ? folder.uri.toString() : undefined;
    const info = parseTrust(await lsp.execute("ndomo.trust.get", uri ? { uri } : {}));
    const restricted = !vscode.workspace.isTrusted;
    const trustLabel = restricted ? TRUST_BOTH : TRUST;
    const items = [
      { label: trustLabel, description: info?.configures.length ? `lets it configure: ${info.configures.join(", ")}` : "it configures nothing now" },
      { label: DONT_TRUST, description: "ndomo ignores its .ndomo/ settings, agents, reflexes and instructions" },
    ];
    const picked = await vscode.window.showQuickPick(items, {
      placeHolder: `ndomo: ${info?.root ?? "this folder"} is ${info?.state ?? "unknown"}${restricted ? " (VS Code: Restricted Mode)" : ""}`,
    });
    if (!picked) return;
    if (picked.label !== DONT_TRUST) {
      // trusting from the palette lifts an earlier Restricted Mode "Don't trust"
      const declined = context.workspaceState.get<string[]>(DECLINED_TRUST, []);
      await context.workspaceState.update(DECLINED_TRUST, declined.filter((d) => d !== (uri ?? "")));
    }
    await answerTrust(uri, picked.label, restricted);
  };

  const start = async (ask = true) => {
    const chosen = await chooseCommand(ask);
    const cmd = chosen ?? userCommand();
    output.appendLine(`starting ${[cmd.command, ...cmd.args].join(" ")} (command from ${cmd.origin})`);
    let c: LanguageClient;
    try {
      c = createClient(output, cmd);
    } catch (err) {
      connected = false;
      render();
      throw new StartError(startFailure(cmd, err));
    }
    client = c;
    const progresses = new Set<() => void>();
    stopCurrent = async () => {
      for (const end of progresses) end();
      progresses.clear();
      turns.reset();
      try {
        await c.stop();
      } catch (err) {
        // A client whose start failed refuses stop() ("Client is not running and can't be
        // stopped"); node's LanguageClient still kills its process. Nothing else to undo.
        output.appendLine(`(stopping the previous client: ${err instanceof Error ? err.message : String(err)})`);
      }
    };
    c.onDidChangeState((e) => {
      connected = e.newState !== State.Stopped;
      if (!connected) turns.reset();
      render();
    });
    c.onNotification("ndomo/status", (raw: unknown) => {
      const status = parseStatus(raw);
      if (status) {
        statuses.delete(status.folder ?? "");
        statuses.set(status.folder ?? "", status);
        lastStatus = pickStatus([...statuses.values()], activeUri());
        render();
        if (lastStatus) chat.onStatus(lastStatus);
      }
    });
    c.onNotification("ndomo/turn/event", (event: unknown) => {
      const running = turns.current;
      if (turns.onEvent(event)) render();
      // `ndomo.review.afterTurn`: this editor's turn ended done: its review, when it changed files
      const ended = event as { kind?: unknown; status?: unknown } | null;
      if (running?.turnId != null && !turns.current && ended?.kind === "turn_finished" && ended.status === "done"
        && settings().get<boolean>("review.afterTurn", false)) {
        reviewTurn(lsp, originals, running.turnId, true).catch((err) => output.appendLine(`review failed: ${String(err)}`));
      }
      const line = describeEvent(event);
      if (line !== null) transcript.append(line);
      chat.onEvent(event);
    });
    c.onRequest(SAVE_DOCUMENTS, (params: unknown) =>
      saveDocuments(params, openFiles, (uri) => {
        const u = vscode.Uri.parse(uri);
        return u.scheme === "file" ? u.fsPath : undefined;
      }),
    );
    c.onRequest(DIAGNOSTICS, (params: unknown) =>
      reportDiagnostics(params, (uri) => vscode.languages.getDiagnostics(vscode.Uri.parse(uri))),
    );
    try {
      await c.start();
    } catch (err) {
      connected = false;
      render();
      throw new StartError(startFailure(cmd, err));
    }
    // Replaces the client's own handler (status-bar progress) now that it is installed.
    c.onRequest(WorkDoneProgressCreateRequest.type, (params) => {
      const end = showTurnProgress(c, params.token, cancelTurn);
      const once = () => {
        progresses.delete(once);
        end();
      };
      progresses.add(once);
      return null;
    });
    // questions and approvals also inline in the conversation view (first answer wins)
    c.onRequest("window/showMessageRequest", (params: any) => chat.ask(params));
    c.onRequest(APPROVE, (params: any) => chat.approve(params));
    chat.reset();
    // not awaited: a modal question must not hold up activation or a restart
    void checkTrust().catch((err) => output.appendLine(`folder trust: ${String(err)}`));
  };
  const stop = async () => {
    const s = stopCurrent;
    stopCurrent = undefined;
    client = undefined;
    if (s) await s();
  };
  /** Stop whatever runs (a failed client included) and start again; errors become a message. */
  const restart = async (ask = true) => {
    await stop();
    lastStatus = null;
    statuses.clear();
    connected = true;
    render();
    try {
      await start(ask);
    } catch (err) {
      ui.error(err instanceof StartError ? err.message : startFailure(currentCommand(), err));
    }
  };

  context.subscriptions.push(
    vscode.commands.registerCommand("ndomo.restartServer", () => restart()),
    vscode.commands.registerCommand("ndomo.folderTrust", async () => {
      try {
        await folderTrust();
      } catch (err) {
        ui.error(`ndomo: ${err instanceof Error ? err.message : String(err)}`);
      }
    }),
    // with several folders, the status bar follows the folder of the active editor
    vscode.window.onDidChangeActiveTextEditor(() => {
      const picked = pickStatus([...statuses.values()], activeUri());
      if (picked === lastStatus) return;
      lastStatus = picked;
      render();
      if (picked) chat.onStatus(picked);
    }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (!affectsServer((s) => e.affectsConfiguration(s))) return;
      // A workspace-chosen command line is asked about first (an agent writing
      // .vscode/settings.json must not start a program with zero clicks); declined, the
      // running server stays.
      if ((await chooseCommand(true)) === null && client) {
        ui.info("ndomo: kept the running server; the workspace's ndomo.server.* settings were not run (\"ndomo: Restart server\" asks again)");
        return;
      }
      await restart(false);
    }),
    // VS Code trusts the workspace: the server restarts without workspaceTrusted: false (and
    // may now use the folder's .venv/bin/ndomo); a "Trust in VS Code and ndomo" answer is
    // then recorded in ndomo too (checkTrust)
    vscode.workspace.onDidGrantWorkspaceTrust(() => restart()),
    { dispose: () => void stop() },
  );

  try {
    await start(false);
  } catch (err) {
    ui.error(err instanceof StartError ? err.message : startFailure(currentCommand(), err));
  }
}

class StartError extends Error {}

export async function deactivate(): Promise<void> {
  const s = stopCurrent;
  stopCurrent = undefined;
  client = undefined;
  if (s) await s();
}
