/** A configuration problem: `index.ts` prints the message as one line and exits 1. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`);
  }
}

/** The one line a failed start-up prints to stderr before it exits 1 (main.ts): a ConfigError says itself, anything else is a start-up failure. */
export function startupFailureLine(error: unknown): string {
  const message = error instanceof ConfigError ? error.message : `start-up failed: ${error instanceof Error ? error.message : String(error)}`;
  return `wfs-subgraph: ${message}\n`;
}
