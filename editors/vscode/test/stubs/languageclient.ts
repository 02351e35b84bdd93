/**
 * A stand-in LanguageClient: records how it was built and answers executeCommand from a
 * script. It keeps the parts of vscode-languageclient 9's behaviour the extension has
 * tripped over in a real VS Code:
 * - `start()` registers every command the server advertises with `vscode.commands`
 *   (the real ExecuteCommandFeature does), so a palette command with the same id fails the
 *   start exactly as it does in the editor;
 * - a failed start leaves the client in `startFailed`, where `stop()` rejects
 *   ("Client is not running and can't be stopped") like the real one.
 */

import * as vscode from "vscode";

import serverCommands from "../server-commands.json";

type Handler = (...args: any[]) => any;

/** The public state (`client.state`), as in vscode-languageclient. */
export enum State {
  Stopped = 1,
  Starting = 3,
  Running = 2,
}

/** The internal state machine of vscode-languageclient's BaseLanguageClient. */
type ClientState = "initial" | "starting" | "startFailed" | "running" | "stopping" | "stopped";

export const ExecuteCommandRequest = { type: { method: "workspace/executeCommand" } };
export const WorkDoneProgressCreateRequest = { type: { method: "window/workDoneProgress/create" } };
export const ShowDocumentRequest = { type: { method: "window/showDocument" } };
export const WorkDoneProgress = { type: { __progress: "workDone" } };
export const CancellationToken = {
  None: { isCancellationRequested: false, onCancellationRequested: () => ({ dispose() {} }) },
};

export const clients: LanguageClient[] = [];

function methodOf(type: string | { method: string }): string {
  return typeof type === "string" ? type : type.method;
}

export class LanguageClient {
  private $state: ClientState = "initial";
  notifications = new Map<string, Handler>();
  /** Server → client request handlers (the last one registered for a method wins). */
  requestHandlers = new Map<string, Handler>();
  progressHandlers = new Map<string | number, Handler>();
  requests: { method: string; params: any }[] = [];
  stateHandlers: Handler[] = [];
  features: any[] = [];
  /** What the registered features announced in `initialize`. */
  capabilities: Record<string, any> = {};
  private registered: { dispose(): unknown }[] = [];
  /** command → result (or a function of the argument). */
  static answers: Record<string, unknown> = {};
  /** The commands the server advertises in its initialize result. */
  static serverCommands: string[] = serverCommands.commands;
  /** The modes and agents the server advertises in its initialize result (`experimental.ndomo`). */
  static advertised: unknown = undefined;
  get initializeResult() {
    return { capabilities: { experimental: { ndomo: LanguageClient.advertised } } };
  }
  /** Decide whether `start()` fails for this client (e.g. `spawn … ENOENT`). */
  static startError: ((client: LanguageClient) => Error | undefined) | undefined;

  constructor(
    public id: string,
    public name: string,
    public serverOptions: any,
    public clientOptions: any,
  ) {
    clients.push(this);
  }
  get state(): State {
    return this.$state === "running" ? State.Running : this.$state === "starting" ? State.Starting : State.Stopped;
  }
  /** Test helper: the internal state. */
  get internalState(): ClientState {
    return this.$state;
  }
  isRunning(): boolean {
    return this.$state === "running";
  }
  registerFeature(feature: any) {
    this.features.push(feature);
  }
  onNotification(method: string, fn: Handler) {
    this.notifications.set(method, fn);
    return { dispose() {} };
  }
  onRequest(type: string | { method: string }, fn: Handler) {
    this.requestHandlers.set(methodOf(type), fn);
    return { dispose: () => this.requestHandlers.delete(methodOf(type)) };
  }
  onProgress(_type: unknown, token: string | number, fn: Handler) {
    this.progressHandlers.set(token, fn);
    return { dispose: () => this.progressHandlers.delete(token) };
  }
  onDidChangeState(fn: Handler) {
    this.stateHandlers.push(fn);
    return { dispose() {} };
  }
  private setState(next: ClientState) {
    const old = this.state;
    this.$state = next;
    for (const h of this.stateHandlers) h({ oldState: old, newState: this.state });
  }
  async start() {
    if (this.$state === "startFailed") throw new Error("Previous start failed. Can't restart server.");
    this.setState("starting");
    const caps: Record<string, any> = {};
    for (const f of this.features) f.fillClientCapabilities(caps);
    this.capabilities = caps;
    try {
      const err = LanguageClient.startError?.(this);
      if (err) throw err;
      for (const id of LanguageClient.serverCommands) {
        this.registered.push(vscode.commands.registerCommand(id, (...args: unknown[]) => this.sendRequest(ExecuteCommandRequest.type, { command: id, arguments: args })));
      }
      for (const f of this.features) f.initialize({}, undefined);
    } catch (err) {
      this.$state = "startFailed";
      for (const h of this.stateHandlers) h({ oldState: State.Starting, newState: State.Stopped });
      throw err;
    }
    this.setState("running");
  }
  async stop() {
    if (this.$state === "stopped" || this.$state === "initial") return;
    if (this.$state !== "running") {
      throw new Error(`Client is not running and can't be stopped. It's current state is: ${this.$state}`);
    }
    for (const d of this.registered.splice(0)) d.dispose();
    this.setState("stopped");
  }
  async dispose() {
    return this.stop();
  }
  async sendRequest(type: { method: string }, params: any) {
    this.requests.push({ method: type.method, params });
    const answer = LanguageClient.answers[params.command];
    if (answer instanceof Error) throw answer;
    return typeof answer === "function" ? answer(params.arguments[0]) : answer ?? null;
  }
  /** Test helper: deliver a server notification. */
  notify(method: string, params: unknown) {
    const fn = this.notifications.get(method);
    if (!fn) throw new Error(`no handler for ${method}`);
    fn(params);
  }
  /** Test helper: a server → client request. */
  async request(method: string, params: unknown) {
    const fn = this.requestHandlers.get(method);
    if (!fn) throw new Error(`no handler for ${method}`);
    return fn(params);
  }
  /** Test helper: a `$/progress` value for `token`. */
  progress(token: string | number, value: unknown) {
    const fn = this.progressHandlers.get(token);
    if (!fn) throw new Error(`no progress handler for ${token}`);
    fn(value);
  }
}
