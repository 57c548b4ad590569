// A stand-in for `vscode-languageclient/node`: records how the client was made and the requests it sent;
// the test decides each request's answer.
/* eslint-disable @typescript-eslint/no-explicit-any */

export enum State { Stopped = 1, Starting = 3, Running = 2 }
export enum TransportKind { stdio = 0 }
export const ExecuteCommandRequest = { type: { method: "workspace/executeCommand" } };

export const clients: LanguageClient[] = [];
export const answers: { respond: (method: string, params: any) => Promise<any> } = {
  respond: async () => null,
};

export class LanguageClient {
  readonly requests: { method: string; params: any; token?: any }[] = [];
  readonly features: any[] = [];
  running = false;
  private stateListeners: ((e: any) => void)[] = [];

  constructor(readonly id: string, readonly name: string, readonly serverOptions: any, readonly clientOptions: any) {
    clients.push(this);
  }
  registerFeature(feature: any): void {
    this.features.push(feature);
  }
  onDidChangeState(listener: (e: any) => void): void {
    this.stateListeners.push(listener);
  }
  async start(): Promise<void> {
    this.running = true;
    this.stateListeners.forEach((l) => l({ oldState: State.Starting, newState: State.Running }));
  }
  async stop(): Promise<void> {
    this.running = false;
    this.stateListeners.forEach((l) => l({ oldState: State.Running, newState: State.Stopped }));
  }
  async dispose(): Promise<void> {}
  isRunning(): boolean {
    return this.running;
  }
  async sendRequest(type: { method: string }, params: any, token?: any): Promise<any> {
    this.requests.push({ method: type.method, params, token });
    return answers.respond(type.method, params);
  }
}
