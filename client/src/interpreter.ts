// Which Python runs the server: `adopter.interpreter`, then the Python extension's active interpreter,
// then `python3`. Pure logic over injected probes, so it is tested without VS Code.
import { execFile } from "node:child_process";

export const MINIMUM: readonly [number, number] = [3, 10];

export interface Candidate {
  source: "adopter.interpreter" | "Python extension" | "python3";
  command: string;
}

export interface ProbeResult {
  executable?: string;
  version?: [number, number, number];
  error?: string; // why it could not be run
}

export type Probe = (command: string) => Promise<ProbeResult>;

export interface Attempt {
  candidate: Candidate;
  outcome: string; // what happened, for the output channel
  usable: boolean;
}

export interface Choice {
  command?: string; // the interpreter to start the server with; undefined when none is usable
  version?: [number, number, number];
  attempts: Attempt[];
  problem?: string; // one sentence for the notification, when the choice is not the user's first
}

/** Expand `${workspaceFolder}`, `${userHome}` and `~` in a configured path. */
export function expandPath(value: string, workspaceFolder: string | undefined, home: string): string {
  let out = value.trim();
  if (workspaceFolder !== undefined) {
    out = out.split("${workspaceFolder}").join(workspaceFolder);
  }
  out = out.split("${userHome}").join(home);
  if (out === "~" || out.startsWith("~/")) {
    out = home + out.slice(1);
  }
  return out;
}

/** The candidates in order, without duplicates. */
export function candidates(configured: string | undefined, fromPythonExtension: string | undefined): Candidate[] {
  const out: Candidate[] = [];
  if (configured) {
    out.push({ source: "adopter.interpreter", command: configured });
  }
  if (fromPythonExtension && !out.some((c) => c.command === fromPythonExtension)) {
    out.push({ source: "Python extension", command: fromPythonExtension });
  }
  if (!out.some((c) => c.command === "python3")) {
    out.push({ source: "python3", command: "python3" });
  }
  return out;
}

function versionText(v: readonly number[]): string {
  return v.join(".");
}

/** Probe the candidates in order; the first with Python >= 3.10 wins. */
export async function chooseInterpreter(list: Candidate[], probe: Probe, minimum = MINIMUM): Promise<Choice> {
  const attempts: Attempt[] = [];
  for (const candidate of list) {
    const result = await probe(candidate.command);
    if (result.error !== undefined || !result.version) {
      attempts.push({ candidate, usable: false, outcome: `cannot run: ${result.error ?? "no version reported"}` });
      continue;
    }
    const [major, minor] = result.version;
    if (major < minimum[0] || (major === minimum[0] && minor < minimum[1])) {
      attempts.push({
        candidate, usable: false,
        outcome: `Python ${versionText(result.version)} is too old (needs ${versionText(minimum)} or newer)`,
      });
      continue;
    }
    attempts.push({ candidate, usable: true, outcome: `Python ${versionText(result.version)} at ${result.executable}` });
    const problem = attempts.length > 1 && list[0].source === "adopter.interpreter"
      ? `adopter.interpreter (${list[0].command}): ${attempts[0].outcome}; using ${candidate.command} instead.`
      : undefined;
    return { command: result.executable ?? candidate.command, version: result.version, attempts, problem };
  }
  const why = attempts.map((a) => `${a.candidate.command}: ${a.outcome}`).join("; ");
  return { attempts, problem: `Adopter needs Python ${versionText(minimum)} or newer to run its server. Tried ${why}.` };
}

const PROBE_SCRIPT = "import sys, json; print(json.dumps([sys.executable, list(sys.version_info[:3])]))";

/** Run `command -c ...` and read its executable and version. */
export const probeInterpreter: Probe = (command) =>
  new Promise((resolve) => {
    execFile(command, ["-c", PROBE_SCRIPT], { timeout: 15000 }, (err, stdout) => {
      if (err) {
        const code = (err as NodeJS.ErrnoException).code;
        resolve({ error: code === "ENOENT" ? "not found" : err.message.split("\n")[0] });
        return;
      }
      try {
        const [executable, version] = JSON.parse(stdout.trim().split("\n").pop() ?? "") as [string, number[]];
        resolve({ executable, version: [version[0], version[1], version[2] ?? 0] });
      } catch {
        resolve({ error: `unexpected output ${JSON.stringify(stdout.slice(0, 80))}` });
      }
    });
  });
