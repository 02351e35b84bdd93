/**
 * VS Code glue: starts `ndomo serve` through vscode-languageclient, binds the palette
 * commands from `commands.ts` and keeps the status-bar item in step with `ndomo/status`.
 * Progress, approvals (showMessageRequest), code actions and diagnostics need no code
 * here: the language client shows them.
 */

import * as vscode from "vscode";
import { ExecuteCommandRequest, LanguageClient, State } from "vscode-languageclient/node";
import type { LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";

import { Context, Lsp, PALETTE, PickItem, Selection, Ui } from "./commands";
import { affectsServer, initializationOptions, serverCommand } from "./config";
import { formatStatus, parseStatus, StatusPayload } from "./status";
import { describeEvent } from "./transcript";
import { ChatView, VIEW_ID } from "./chat/view";

let client: LanguageClient | undefined;
let lastStatus: StatusPayload | null = null;

function settings(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration("ndomo");
}

function createClient(output: vscode.OutputChannel): LanguageClient {
  const cfg = settings();
  const get = <T>(key: string) => cfg.get<T>(key);
  const cmd = serverCommand(get);
  const serverOptions: ServerOptions = {
    command: cmd.command,
    args: cmd.args,
    options: { env: { ...process.env, ...cmd.env } },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
    initializationOptions: initializationOptions(get),
    outputChannel: output,
  };
  return new LanguageClient("ndomo", "ndomo", serverOptions, clientOptions);
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

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("ndomo");
  const transcript = vscode.window.createOutputChannel("ndomo transcript");
  const item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 100);
  item.command = "ndomo.statusMenu";
  const render = (connected: boolean) => {
    const view = formatStatus(lastStatus, connected);
    item.text = view.text;
    item.tooltip = view.tooltip;
  };
  render(true);
  item.show();
  context.subscriptions.push(output, transcript, item);

  const ui = makeUi(output);
  const ctx: Context = { lsp: makeLsp(), ui, status: () => lastStatus };
  const chat = new ChatView(vscode.Uri.joinPath(context.extensionUri, "dist"), ctx.lsp);
  context.subscriptions.push(
    vscode.window.registerWebviewViewProvider(VIEW_ID, chat, { webviewOptions: { retainContextWhenHidden: true } }),
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

  const start = async () => {
    client = createClient(output);
    client.onDidChangeState((e) => render(e.newState !== State.Stopped));
    client.onNotification("ndomo/status", (raw: unknown) => {
      const status = parseStatus(raw);
      if (status) {
        lastStatus = status;
        render(true);
        chat.onStatus(status);
      }
    });
    client.onNotification("ndomo/turn/event", (event: unknown) => {
      const line = describeEvent(event);
      if (line !== null) transcript.append(line);
      chat.onEvent(event);
    });
    await client.start();
    // questions and approvals also inline in the conversation view (first answer wins)
    client.onRequest("window/showMessageRequest", (params: any) => chat.ask(params));
    chat.reset();
  };
  const stop = async () => {
    const c = client;
    client = undefined;
    if (c) await c.stop();
  };

  context.subscriptions.push(
    vscode.commands.registerCommand("ndomo.restartServer", async () => {
      await stop();
      await start();
    }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (affectsServer((s) => e.affectsConfiguration(s))) {
        await stop();
        await start();
      }
    }),
    { dispose: () => void stop() },
  );

  try {
    await start();
  } catch (err) {
    render(false);
    ui.error(`ndomo: could not start the server (${serverCommand((k) => settings().get(k)).command}): ${String(err)}`);
  }
}

export async function deactivate(): Promise<void> {
  const c = client;
  client = undefined;
  if (c) await c.stop();
}
