// A small stand-in for the `vscode` module: enough API for the client's logic, with every call recorded
// and every answer (configuration, trust, quick picks, the Python extension) set by the test.
/* eslint-disable @typescript-eslint/no-explicit-any */

type Listener = (e: any) => void;

export class Uri {
  private constructor(readonly scheme: string, readonly path: string, readonly query = "", readonly fragment = "") {}
  static file(path: string): Uri {
    return new Uri("file", path);
  }
  static parse(text: string): Uri {
    const m = /^([a-z][\w+.-]*):(?:\/\/)?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/i.exec(text);
    return m ? new Uri(m[1], m[2], m[3] ?? "", m[4] ?? "") : new Uri("file", text);
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, [base.path, ...parts].join("/"));
  }
  static from(c: { scheme: string; path?: string; query?: string; fragment?: string }): Uri {
    return new Uri(c.scheme, c.path ?? "", c.query ?? "", c.fragment ?? "");
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}://${this.path}${this.query ? `?${this.query}` : ""}${this.fragment ? `#${this.fragment}` : ""}`;
  }
}

export enum ViewColumn { Active = -1, Beside = -2, One = 1 }
export enum StatusBarAlignment { Left = 1, Right = 2 }
export enum ConfigurationTarget { Global = 1, Workspace = 2 }
export enum ProgressLocation { SourceControl = 1, Window = 10, Notification = 15 }
export class ThemeColor { constructor(readonly id: string) {} }
export class Disposable { constructor(private readonly f: () => void = () => undefined) {} dispose(): void { this.f(); } }

function event(list: Listener[]): (l: Listener) => Disposable {
  return (l) => {
    list.push(l);
    return new Disposable(() => list.splice(list.indexOf(l), 1));
  };
}

export const mock = {
  config: {} as Record<string, unknown>,
  trusted: true,
  workspaceFolders: [] as { uri: Uri; name: string }[],
  pythonExtension: undefined as undefined | { interpreter?: string },
  quickPickAnswers: [] as ((items: any[]) => any)[], // one per showQuickPick, in order
  inputAnswers: [] as (string | undefined)[],
  messages: [] as { level: string; text: string; buttons: string[] }[],
  messageAnswers: [] as ((text: string, buttons: string[]) => string | undefined)[], // one per message, in order
  commands: new Map<string, (...args: any[]) => any>(),
  executed: [] as { command: string; args: any[] }[],
  panels: [] as any[],
  progress: [] as { options: any; cancel: () => void }[],
  statusItems: [] as any[],
  log: [] as string[],
  activeTextEditor: undefined as any,
  textDocuments: [] as any[],
  diagnostics: new Map<string, any[]>(),
  listeners: { config: [] as Listener[], trust: [] as Listener[], diagnostics: [] as Listener[], editor: [] as Listener[] },
  reset(): void {
    this.config = {};
    this.trusted = true;
    this.workspaceFolders = [];
    this.pythonExtension = undefined;
    this.quickPickAnswers = [];
    this.inputAnswers = [];
    this.messages = [];
    this.messageAnswers = [];
    this.commands.clear();
    this.executed = [];
    this.panels = [];
    this.progress = [];
    this.statusItems = [];
    this.log = [];
    this.activeTextEditor = undefined;
    this.textDocuments = [];
    this.diagnostics.clear();
    for (const l of Object.values(this.listeners)) {
      l.length = 0;
    }
  },
};

function message(level: string) {
  return (text: string, ...buttons: string[]) => {
    mock.messages.push({ level, text, buttons });
    const answer = mock.messageAnswers.shift();
    return Promise.resolve(answer ? answer(text, buttons) : undefined);
  };
}

export const window = {
  get activeTextEditor() {
    return mock.activeTextEditor;
  },
  createOutputChannel(name: string) {
    const line = (level: string) => (text: string) => mock.log.push(`${level} ${text}`);
    return { name, info: line("info"), warn: line("warn"), error: line("error"), debug: line("debug"), trace: line("trace"),
      appendLine: line("info"), append: line("info"), show: () => mock.log.push("show"), dispose: () => undefined };
  },
  createStatusBarItem(id: string) {
    const item = { id, text: "", tooltip: "", command: "", name: "", backgroundColor: undefined, show() {}, dispose() {} };
    mock.statusItems.push(item);
    return item;
  },
  showErrorMessage: message("error"),
  showWarningMessage: message("warning"),
  showInformationMessage: message("info"),
  async showQuickPick(items: any[]) {
    const answer = mock.quickPickAnswers.shift();
    if (!answer) {
      throw new Error(`unexpected quick pick: ${items.map((i) => i.label).join(", ")}`);
    }
    return answer(items);
  },
  async withProgress(options: any, task: (progress: any, token: any) => Promise<any>) {
    const listeners: Listener[] = [];
    const token = { isCancellationRequested: false, onCancellationRequested: event(listeners) };
    mock.progress.push({ options, cancel: () => { token.isCancellationRequested = true; listeners.forEach((l) => l(undefined)); } });
    return task({ report: () => undefined }, token);
  },
  async showInputBox() {
    return mock.inputAnswers.shift();
  },
  async showOpenDialog() {
    return undefined;
  },
  async showSaveDialog() {
    return undefined;
  },
  async showTextDocument(doc: any) {
    return { document: doc };
  },
  createWebviewPanel(viewType: string, title: string) {
    const posted: any[] = [];
    const receive: Listener[] = [];
    const dispose: Listener[] = [];
    const panel = {
      viewType, title, posted,
      webview: { html: "", options: {}, cspSource: "vscode-webview://test", asWebviewUri: (u: Uri) => `vscode-webview://test${u.path}`,
        postMessage: async (m: any) => { posted.push(m); return true; }, onDidReceiveMessage: event(receive) },
      onDidDispose: event(dispose), reveal() {}, receive: (m: any) => receive.forEach((l) => l(m)),
    };
    mock.panels.push(panel);
    return panel;
  },
  registerWebviewPanelSerializer: () => new Disposable(),
  onDidChangeActiveTextEditor: event(mock.listeners.editor),
};

export const workspace = {
  get isTrusted() {
    return mock.trusted;
  },
  get workspaceFolders() {
    return mock.workspaceFolders;
  },
  get textDocuments() {
    return mock.textDocuments;
  },
  getConfiguration(section: string) {
    return {
      get<T>(key: string, defaultValue: T): T {
        const full = `${section}.${key}`;
        return full in mock.config ? (mock.config[full] as T) : defaultValue;
      },
      update: async (key: string, value: unknown) => {
        mock.config[`${section}.${key}`] = value;
      },
    };
  },
  onDidChangeConfiguration: event(mock.listeners.config),
  onDidGrantWorkspaceTrust: event(mock.listeners.trust),
  registerTextDocumentContentProvider: () => new Disposable(),
  async openTextDocument(uri: Uri) {
    return { uri, languageId: "plaintext" };
  },
  fs: { readFile: async () => new Uint8Array(), writeFile: async () => undefined },
};

export const commands = {
  registerCommand(id: string, f: (...args: any[]) => any) {
    if (mock.commands.has(id)) {
      throw new Error(`command ${id} already exists`);
    }
    mock.commands.set(id, f);
    return new Disposable(() => mock.commands.delete(id));
  },
  async executeCommand(command: string, ...args: any[]) {
    mock.executed.push({ command, args });
    const own = mock.commands.get(command);
    return own ? own(...args) : undefined;
  },
};

export const languages = {
  onDidChangeDiagnostics: event(mock.listeners.diagnostics),
  getDiagnostics: (uri: Uri) => mock.diagnostics.get(uri.toString()) ?? [],
  setTextDocumentLanguage: async (doc: any, languageId: string) => ({ ...doc, languageId }),
};

export const extensions = {
  getExtension(id: string) {
    if (id !== "ms-python.python" || !mock.pythonExtension) {
      return undefined;
    }
    const interpreter = mock.pythonExtension.interpreter;
    const api = {
      environments: {
        getActiveEnvironmentPath: () => ({ path: interpreter ?? "" }),
        resolveEnvironment: async () => (interpreter ? { executable: { uri: Uri.file(interpreter) } } : undefined),
        onDidChangeActiveEnvironmentPath: event([]),
      },
    };
    return { isActive: true, exports: api, activate: async () => api };
  },
};

export const env = { clipboard: { text: "", async writeText(t: string) { env.clipboard.text = t; } } };
