// Command ids. The client's own commands live under `adopter.client.`; the server's (run through
// workspace/executeCommand, registered by the language client itself) never share that prefix.
export const CLIENT = {
  searchAccelerator: "adopter.client.searchAccelerator",
  showArchitecture: "adopter.client.showArchitecture",
  fixAll: "adopter.client.fixAll",
  restartServer: "adopter.client.restartServer",
  showOutput: "adopter.client.showOutput",
  selectInterpreter: "adopter.client.selectInterpreter",
  verifyFixes: "adopter.client.verifyFixes",
} as const;

export const SERVER = {
  searchAccelerator: "adopter.searchAccelerator",
  showArchitecture: "adopter.showArchitecture",
  verifyFixes: "adopter.verifyFixes",
} as const;

export const FIX_ALL_KIND = "source.fixAll.adopter";
export const DIAGNOSTIC_SOURCE = "adopter";
