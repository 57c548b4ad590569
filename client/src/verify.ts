// *Verify and measure*: which Python runs the user's model (the project's own, not necessarily the
// server's), whether it has torch, and the `adopter.verifyFixes` request for a class or one finding.
// Pure logic over injected probes, so it is tested without VS Code.
import { execFile } from "node:child_process";

/** What the code lens or the code action passes: the document, the class, and (the action) one finding. */
export interface VerifyTarget {
  uri: string;
  class: string;
  rule?: string;
  line?: number; // 1-based, as the server gives it
}

export interface VerifyInterpreter {
  command: string;
  source: "Python extension" | "adopter.interpreter" | "the server's interpreter";
}

/**
 * The Python that runs the user's code: the Python extension's active interpreter when that extension is
 * installed (and says one), else `adopter.interpreter`, else the one the server was started with.
 */
export function verifyInterpreter(
  fromPythonExtension: string | undefined, configured: string | undefined, server: string | undefined,
): VerifyInterpreter | undefined {
  if (fromPythonExtension) {
    return { command: fromPythonExtension, source: "Python extension" };
  }
  if (configured) {
    return { command: configured, source: "adopter.interpreter" };
  }
  return server ? { command: server, source: "the server's interpreter" } : undefined;
}

export interface TorchProbe {
  executable?: string;
  torch?: string; // torch's version when it imports
  error?: string; // why the interpreter could not run, or why torch does not import
}

const TORCH_SCRIPT = [
  "import json, sys",
  "try:",
  "    import torch",
  "    print(json.dumps({'executable': sys.executable, 'torch': torch.__version__}))",
  "except Exception as exc:",
  "    print(json.dumps({'executable': sys.executable, 'error': f'{type(exc).__name__}: {exc}'}))",
].join("\n");

/** Run `command` and ask whether torch imports (two minutes at most: a first import of torch is slow). */
export function probeTorch(command: string): Promise<TorchProbe> {
  return new Promise((resolve) => {
    execFile(command, ["-c", TORCH_SCRIPT], { timeout: 120_000 }, (err, stdout) => {
      try {
        resolve(JSON.parse(stdout.trim().split("\n").pop() ?? "") as TorchProbe);
      } catch {
        const code = (err as NodeJS.ErrnoException | null)?.code;
        resolve({ error: code === "ENOENT" ? "not found" : (err?.message.split("\n")[0] ?? `unexpected output ${JSON.stringify(stdout.slice(0, 80))}`) });
      }
    });
  });
}

/** The sentence for an interpreter that cannot run the model, or undefined when it can. */
export function torchProblem(interpreter: VerifyInterpreter, probe: TorchProbe): string | undefined {
  if (probe.torch) {
    return undefined;
  }
  const where = `${interpreter.command} (${interpreter.source})`;
  if (probe.error && /ModuleNotFoundError: No module named 'torch'/.test(probe.error)) {
    return `${where} has no torch. Verifying a fix runs your model, so it needs your project's Python: pick one that has torch.`;
  }
  return `${where} cannot run your model: ${probe.error ?? "no answer"}. Pick your project's Python (with torch).`;
}

export interface VerifySettings {
  factories: Record<string, string>; // class name → module:fn that builds it (fn() or fn(cls); model or (model, inputs))
  inputs: Record<string, string>; // class name → module:fn(model) returning its inputs
  device: string;
  repeats: number;
  timeout: number;
}

export interface ConfigurationLike {
  get<T>(key: string, defaultValue: T): T;
}

export function verifySettings(config: ConfigurationLike): VerifySettings {
  const table = (key: string): Record<string, string> => {
    const value = config.get<unknown>(key, {});
    return value && typeof value === "object" && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([, v]) => typeof v === "string")) as Record<string, string>
      : {};
  };
  const positive = (key: string, fallback: number): number => {
    const value = Number(config.get<number>(key, fallback));
    return Number.isFinite(value) && value > 0 ? value : fallback;
  };
  return {
    factories: table("verify.factories"),
    inputs: table("verify.inputs"),
    device: config.get<string>("verify.device", "cpu"),
    repeats: Math.round(positive("verify.repeats", 10)),
    timeout: positive("verify.timeout", 300),
  };
}

/** The `adopter.verifyFixes` argument: the target, the interpreter and what the settings say for the class. */
export function verifyRequest(target: VerifyTarget, python: string, settings: VerifySettings): Record<string, unknown> {
  const request: Record<string, unknown> = { uri: target.uri, class: target.class };
  if (target.rule) {
    request.rule = target.rule;
  }
  if (target.line !== undefined) {
    request.line = target.line;
  }
  request.python = python;
  const factory = settings.factories[target.class];
  const inputs = settings.inputs[target.class];
  if (factory) {
    request.factory = factory;
  }
  if (inputs) {
    request.inputs = inputs;
  }
  return { ...request, device: settings.device, repeats: settings.repeats, timeout: settings.timeout };
}

/** The panel's title: the class, and the rule when one finding's fix is verified. */
export function verifyLabel(target: VerifyTarget): string {
  return target.rule ? `${target.class} (${target.rule}, line ${target.line})` : target.class;
}
