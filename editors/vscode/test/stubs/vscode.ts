/**
 * The few `vscode` APIs the extension touches, recorded and scriptable. Tests reach the
 * recorded state through `stub`.
 */

type Handler = (...args: any[]) => any;

export const stub = {
  commands: new Map<string, Handler>(),
  config: {} as Record<string, unknown>,
  inputs: [] as (string | undefined)[],
  /** Picks the item whose args match; or undefined (dismissed). */
  pickBy: undefined as undefined | ((items: any[]) => any),
  picked: [] as any[][],
  infos: [] as string[],
  errors: [] as string[],
  output: new Map<string, string[]>(),
  statusItems: [] as StatusBarItem[],
  activeTextEditor: undefined as any,
  webviewViews: new Map<string, unknown>(),
  reset() {
    this.webviewViews.clear();
    this.commands.clear();
    this.config = {};
    this.inputs = [];
    this.pickBy = undefined;
    this.picked = [];
    this.infos = [];
    this.errors = [];
    this.output.clear();
    this.statusItems = [];
    this.activeTextEditor = undefined;
  },
};

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class StatusBarItem {
  text = "";
  tooltip: string | undefined;
  command: string | undefined;
  visible = false;
  show() {
    this.visible = true;
  }
  hide() {
    this.visible = false;
  }
  dispose() {}
}

export const window = {
  get activeTextEditor() {
    return stub.activeTextEditor;
  },
  createOutputChannel(name: string) {
    const lines: string[] = [];
    stub.output.set(name, lines);
    return {
      name,
      append: (s: string) => lines.push(s),
      appendLine: (s: string) => lines.push(s + "\n"),
      show: () => {},
      dispose: () => {},
    };
  },
  createStatusBarItem(_align?: StatusBarAlignment, _priority?: number) {
    const item = new StatusBarItem();
    stub.statusItems.push(item);
    return item;
  },
  async showInputBox(_opts?: unknown) {
    return stub.inputs.shift();
  },
  async showQuickPick(items: any[], _opts?: unknown) {
    stub.picked.push(items);
    return stub.pickBy ? stub.pickBy(items) : undefined;
  },
  showInformationMessage(msg: string) {
    stub.infos.push(msg);
    return Promise.resolve(undefined);
  },
  registerWebviewViewProvider(id: string, provider: unknown) {
    stub.webviewViews.set(id, provider);
    return { dispose: () => stub.webviewViews.delete(id) };
  },
  showErrorMessage(msg: string) {
    stub.errors.push(msg);
    return Promise.resolve(undefined);
  },
};

export const commands = {
  registerCommand(id: string, fn: Handler) {
    if (stub.commands.has(id)) throw new Error(`command ${id} registered twice`);
    stub.commands.set(id, fn);
    return { dispose: () => stub.commands.delete(id) };
  },
  executeCommand(id: string, ...args: unknown[]) {
    const fn = stub.commands.get(id);
    if (!fn) throw new Error(`no command ${id}`);
    return Promise.resolve(fn(...args));
  },
};

export const workspace = {
  getConfiguration(section: string) {
    return {
      get<T>(key: string, dflt?: T): T | undefined {
        const full = `${section}.${key}`;
        return (full in stub.config ? stub.config[full] : dflt) as T | undefined;
      },
    };
  },
  onDidChangeConfiguration(_fn: Handler) {
    return { dispose() {} };
  },
};

export const Uri = {
  joinPath(base: { path: string } | string, ...parts: string[]) {
    const root = typeof base === "string" ? base : base.path;
    return { path: [root, ...parts].join("/"), toString: () => [root, ...parts].join("/") };
  },
};
