// Whether the chosen Python can run the server with what the .vsix carries, and what to do when it cannot:
// the launcher's `--probe` says which packages are missing (one JSON line, exit status 4), before any
// language client starts, so a Python without the compiled packages (the universal .vsix) never
// crash-loops. Pure logic over the probe's output, tested without VS Code.
import { execFile } from "node:child_process";
import { join } from "node:path";

export const MISSING_EXIT = 4; // client/python/launch.py MISSING

export interface MissingPackage {
  module: string;
  package: string; // the PyPI distribution
  error: string;
}

export type DependencyProbe =
  | { state: "ready"; python?: number[]; executable?: string }
  | { state: "missing"; missing: MissingPackage[]; python?: number[]; executable?: string }
  | { state: "unknown"; error: string }; // the probe itself failed: the server is started and tells

export type StartDecision =
  | { action: "start"; command: string; privateEnvironment: boolean }
  | { action: "ask"; missing: MissingPackage[]; message: string };

/** The launcher's report: the last stdout line that is its JSON object. */
export function parseProbe(stdout: string, exitCode: number | null, stderr = ""): DependencyProbe {
  for (const line of stdout.split(/\r?\n/).reverse()) {
    if (!line.trim().startsWith("{")) {
      continue;
    }
    try {
      const report = JSON.parse(line) as { adopter?: string; missing?: MissingPackage[]; python?: number[]; executable?: string };
      if (report.adopter === "ready" && exitCode === 0) {
        return { state: "ready", python: report.python, executable: report.executable };
      }
      if (report.adopter === "missing" && exitCode === MISSING_EXIT && Array.isArray(report.missing) && report.missing.length > 0) {
        return { state: "missing", missing: report.missing, python: report.python, executable: report.executable };
      }
    } catch {
      // not the report
    }
  }
  const why = stderr.trim().split(/\r?\n/).pop() || `exit status ${exitCode}`;
  return { state: "unknown", error: why };
}

/** `a`, `a and b`, `a, b and c`. */
export function listText(items: string[]): string {
  return items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`;
}

/** The one sentence the notification and the output say. */
export function missingMessage(probe: DependencyProbe & { state: "missing" }, command: string): string {
  const python = probe.python ? `Python ${probe.python.join(".")}` : "Python";
  const packages = listText(probe.missing.map((m) => m.package));
  return `${python} at ${probe.executable ?? command} lacks ${packages}, which the Adopter server needs ` +
    "(this .vsix carries no compiled packages for it). Install them into a private environment for Adopter, " +
    "or select another interpreter.";
}

/**
 * The chosen interpreter when it has everything; else the private environment when an earlier Install
 * made one that has everything; else ask the user (Install / Select Interpreter).
 */
export function decideStart(command: string, probe: DependencyProbe, privateCommand?: string, privateProbe?: DependencyProbe): StartDecision {
  if (probe.state !== "missing") {
    return { action: "start", command, privateEnvironment: false };
  }
  if (privateCommand && privateProbe?.state === "ready") {
    return { action: "start", command: privateCommand, privateEnvironment: true };
  }
  return { action: "ask", missing: probe.missing, message: missingMessage(probe, command) };
}

/** The Python of a venv (`Scripts\python.exe` on Windows). */
export function venvPython(dir: string, platform: string): string {
  return platform === "win32" ? join(dir, "Scripts", "python.exe") : join(dir, "bin", "python");
}

export interface Step {
  title: string;
  command: string;
  args: string[];
}

/** Make the private venv with the chosen Python, then pip-install the packages the .vsix lacks. */
export function installSteps(basePython: string, dir: string, platform: string, requirements: string | undefined, missing: MissingPackage[]): Step[] {
  const packages = requirements ? ["-r", requirements] : missing.map((m) => m.package);
  return [
    { title: "creating a private Python environment", command: basePython, args: ["-m", "venv", "--clear", dir] },
    {
      title: `installing ${listText(missing.map((m) => m.package))}`,
      command: venvPython(dir, platform),
      args: ["-m", "pip", "install", "--disable-pip-version-check", "--no-input", ...packages],
    },
  ];
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  error?: string; // could not be started at all
}

export function run(command: string, args: string[], timeoutMs: number, env?: NodeJS.ProcessEnv): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, env }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === "number" ? (err as { code: number }).code : null) : 0;
      const startError = err && code === null ? err.message.split("\n")[0] : undefined;
      resolve({ code, stdout: String(stdout), stderr: String(stderr), error: startError });
    });
  });
}

/** Run `python launch.py --probe`. */
export async function probeDependencies(command: string, launcher: string): Promise<DependencyProbe> {
  const result = await run(command, [launcher, "--probe"], 60000);
  if (result.error) {
    return { state: "unknown", error: result.error };
  }
  return parseProbe(result.stdout, result.code, result.stderr);
}
