/** A stand-in LanguageClient: records how it was built and answers executeCommand from a script. */

type Handler = (...args: any[]) => any;

export enum State {
  Stopped = 1,
  Starting = 3,
  Running = 2,
}

export const ExecuteCommandRequest = { type: { method: "workspace/executeCommand" } };

export const clients: LanguageClient[] = [];

export class LanguageClient {
  state = State.Stopped;
  notifications = new Map<string, Handler>();
  requests: { method: string; params: any }[] = [];
  stateHandlers: Handler[] = [];
  /** command → result (or a function of the argument). */
  static answers: Record<string, unknown> = {};

  constructor(
    public id: string,
    public name: string,
    public serverOptions: any,
    public clientOptions: any,
  ) {
    clients.push(this);
  }
  onNotification(method: string, fn: Handler) {
    this.notifications.set(method, fn);
    return { dispose() {} };
  }
  serverRequests = new Map<string, Handler>();
  onRequest(method: string, fn: Handler) {
    this.serverRequests.set(method, fn);
    return { dispose() {} };
  }
  onDidChangeState(fn: Handler) {
    this.stateHandlers.push(fn);
    return { dispose() {} };
  }
  async start() {
    this.state = State.Running;
    for (const h of this.stateHandlers) h({ oldState: State.Stopped, newState: State.Running });
  }
  async stop() {
    this.state = State.Stopped;
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
}
