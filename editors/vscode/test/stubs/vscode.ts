/**
 * The few `vscode` APIs the extension touches, recorded and scriptable. Tests reach the
 * recorded state through `stub`. Where the real editor is strict, so is this:
 * - `getConfiguration().get()` hands objects back as read-only Proxies (VS Code does; they
 *   cannot be `structuredClone`d, and writing to them fails here);
 * - `registerCommand` throws on an id that is already registered.
 */

type Handler = (...args: any[]) => any;

export const stub = {
  commands: new Map<string, Handler>(),
  config: {} as Record<string, unknown>,
  /** Values a workspace sets (its .vscode/settings.json): they win over `config` (the user's). */
  workspaceConfig: {} as Record<string, unknown>,
  /** showWarningMessage calls (modal questions included) and how each is answered. */
  warnings: [] as { message: string; options: any; items: string[] }[],
  answerWarning: undefined as undefined | ((message: string, items: string[]) => string | undefined),
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
  visibleTextEditors: [] as any[],
  textDocuments: [] as any[],
  workspaceFolders: undefined as undefined | { uri: Uri; name: string; index: number }[],
  isTrusted: true,
  configListeners: [] as Handler[],
  editorListeners: [] as Handler[],
  trustListeners: [] as Handler[],
  shown: [] as { uri: string; options: any }[],
  progresses: [] as StubProgress[],
  /** What `languages.getDiagnostics(uri)` answers, by file path. */
  diagnostics: new Map<string, any[]>(),
  reset() {
    this.diagnostics.clear();
    this.webviewViews.clear();
    this.commands.clear();
    this.config = {};
    this.workspaceConfig = {};
    this.warnings = [];
    this.answerWarning = undefined;
    this.inputs = [];
    this.pickBy = undefined;
    this.picked = [];
    this.infos = [];
    this.errors = [];
    this.output.clear();
    this.statusItems = [];
    this.activeTextEditor = undefined;
    this.visibleTextEditors = [];
    this.textDocuments = [];
    this.workspaceFolders = undefined;
    this.isTrusted = true;
    this.configListeners = [];
    this.editorListeners = [];
    this.trustListeners = [];
    this.shown = [];
    this.progresses = [];
  },
  /** Make `uri` the active editor's document and fire onDidChangeActiveTextEditor. */
  activate(uri: string) {
    this.activeTextEditor = { document: { uri: { toString: () => uri, scheme: "file", fsPath: uri.replace("file://", "") } }, selection: undefined };
    for (const fn of this.editorListeners) fn(this.activeTextEditor);
  },
  /** Fire onDidChangeConfiguration for these changed sections. */
  async changeConfig(sections: string[]) {
    const e = { affectsConfiguration: (s: string) => sections.some((c) => c === s || c.startsWith(s + ".") || s.startsWith(c + ".")) };
    for (const fn of this.configListeners) await fn(e);
  },
};

/** An ExtensionContext's globalState / workspaceState. */
export class Memento {
  values = new Map<string, unknown>();
  get<T>(key: string, dflt?: T): T | undefined {
    return (this.values.has(key) ? this.values.get(key) : dflt) as T | undefined;
  }
  async update(key: string, value: unknown) {
    this.values.set(key, value);
  }
}

/** A notification shown with window.withProgress. */
export interface StubProgress {
  options: any;
  reports: any[];
  done: boolean;
  cancel(): void;
}

/** Like VS Code's configuration proxy: reads go through, writes are refused. */
function readOnly(value: unknown): unknown {
  if (Array.isArray(value)) return JSON.parse(JSON.stringify(value));
  if (!value || typeof value !== "object") return value;
  const refuse = () => {
    throw new TypeError("configuration values are read-only");
  };
  return new Proxy(value as object, {
    get: (target, prop) => {
      if (prop === "toJSON") return () => JSON.parse(JSON.stringify(target));
      return readOnly((target as Record<PropertyKey, unknown>)[prop]);
    },
    set: refuse,
    deleteProperty: refuse,
    defineProperty: refuse,
  });
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

export enum ViewColumn {
  Active = -1,
  Beside = -2,
  One = 1,
}

export class Range {
  constructor(
    public startLine: number,
    public startCharacter: number,
    public endLine: number,
    public endCharacter: number,
  ) {}
}

export class Uri {
  constructor(
    public scheme: string,
    public fsPath: string,
  ) {}
  static parse(value: string): Uri {
    const m = /^([a-z][a-z0-9+.-]*):(\/\/)?(.*)$/i.exec(value);
    if (!m) throw new Error(`not a uri: ${value}`);
    return new Uri(m[1], m[1] === "file" ? decodeURIComponent(m[3]) : m[3]);
  }
  static file(path: string): Uri {
    return new Uri("file", path);
  }
  /** The extension's own files (`context.extensionUri`, a Uri or `{path}` in tests). */
  static joinPath(base: { scheme?: string; path: string }, ...parts: string[]): Uri {
    return new Uri(base.scheme ?? "file", [base.path, ...parts].join("/"));
  }
  get path(): string {
    return this.fsPath;
  }
  toString(): string {
    return this.scheme === "file" ? `file://${encodeURI(this.fsPath)}` : `${this.scheme}:${this.fsPath}`;
  }
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
  onDidChangeActiveTextEditor(fn: Handler) {
    stub.editorListeners.push(fn);
    return { dispose: () => (stub.editorListeners = stub.editorListeners.filter((f) => f !== fn)) };
  },
  get visibleTextEditors() {
    return stub.visibleTextEditors;
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
  showWarningMessage(message: string, options?: any, ...items: string[]) {
    if (typeof options === "string") {
      items = [options, ...items];
      options = undefined;
    }
    stub.warnings.push({ message, options, items });
    return Promise.resolve(stub.answerWarning ? stub.answerWarning(message, items) : undefined);
  },
  showErrorMessage(msg: string) {
    stub.errors.push(msg);
    return Promise.resolve(undefined);
  },
  async showTextDocument(doc: any, options?: any) {
    stub.shown.push({ uri: doc.uri.toString(), options });
    return { document: doc };
  },
  withProgress(options: any, task: (progress: any, token: any) => Promise<unknown>) {
    const cancelListeners: Handler[] = [];
    const entry: StubProgress = {
      options,
      reports: [],
      done: false,
      cancel: () => cancelListeners.forEach((fn) => fn()),
    };
    stub.progresses.push(entry);
    const token = { onCancellationRequested: (fn: Handler) => (cancelListeners.push(fn), { dispose() {} }) };
    return Promise.resolve(task({ report: (v: unknown) => entry.reports.push(v) }, token)).finally(() => (entry.done = true));
  },
};

export const commands = {
  registerCommand(id: string, fn: Handler) {
    if (stub.commands.has(id)) throw new Error(`command '${id}' already exists`);
    stub.commands.set(id, fn);
    return { dispose: () => stub.commands.delete(id) };
  },
  executeCommand(id: string, ...args: unknown[]) {
    const fn = stub.commands.get(id);
    if (!fn) throw new Error(`no command ${id}`);
    return Promise.resolve(fn(...args));
  },
};

export const languages = {
  getDiagnostics(uri: Uri) {
    return stub.diagnostics.get(uri.fsPath) ?? [];
  },
};

export const workspace = {
  get workspaceFolders() {
    return stub.workspaceFolders;
  },
  get isTrusted() {
    return stub.isTrusted;
  },
  get textDocuments() {
    return stub.textDocuments;
  },
  getConfiguration(section: string) {
    return {
      get<T>(key: string, dflt?: T): T | undefined {
        const full = `${section}.${key}`;
        if (full in stub.workspaceConfig) return readOnly(stub.workspaceConfig[full]) as T;
        return (full in stub.config ? readOnly(stub.config[full]) : dflt) as T | undefined;
      },
      inspect(key: string) {
        const full = `${section}.${key}`;
        return {
          key: full,
          globalValue: full in stub.config ? readOnly(stub.config[full]) : undefined,
          workspaceValue: full in stub.workspaceConfig ? readOnly(stub.workspaceConfig[full]) : undefined,
        };
      },
    };
  },
  async openTextDocument(uri: Uri) {
    return { uri };
  },
  onDidChangeConfiguration(fn: Handler) {
    stub.configListeners.push(fn);
    return { dispose: () => (stub.configListeners = stub.configListeners.filter((f) => f !== fn)) };
  },
  onDidGrantWorkspaceTrust(fn: Handler) {
    stub.trustListeners.push(fn);
    return { dispose() {} };
  },
  registerTextDocumentContentProvider(_scheme: string, _provider: unknown) {
    return { dispose() {} };
  },
};
