import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startShiftChurn, type ShiftChurn } from './churn';
import { startEmulator } from './emulator';
import type { Emulator, EmulatorOptions, PageReferenceFormat } from './types';

// A configuration problem, reported as one line naming the variable.
class CliError extends Error {}

type Env = Record<string, string | undefined>;

function port(name: string, raw: string): number {
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || value > 65535) throw new CliError(`${name} must be a port number (0-65535), got "${raw}"`);
  return value;
}

/**
 * EMULATOR_EDIT_INTERVAL_SECONDS: every that many seconds, one edit to each company's
 * shifts (emulator/churn.ts, as the demo makes), so live updates and their fan-out across
 * replicas can be watched against this emulator as a separate upstream. Unset: the data
 * never changes.
 */
function editIntervalMs(env: Env): number | undefined {
  const raw = env.EMULATOR_EDIT_INTERVAL_SECONDS;
  if (!raw) return undefined;
  const seconds = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw.trim()) || !(seconds > 0) || seconds > 86_400) throw new CliError(`EMULATOR_EDIT_INTERVAL_SECONDS must be a number of seconds above 0 (at most 86400), got "${raw}"`);
  return seconds * 1000;
}

// Fixed ports by default, so the printed URLs and tenants file stay valid across runs.
function optionsFrom(env: Env): EmulatorOptions {
  const options: EmulatorOptions = {
    host: env.EMULATOR_HOST || '127.0.0.1',
    authPort: port('EMULATOR_AUTH_PORT', env.EMULATOR_AUTH_PORT || '4010'),
    shardPorts: (env.EMULATOR_SHARD_PORTS || '4011,4012').split(',').map((raw) => port('EMULATOR_SHARD_PORTS', raw)),
  };
  if (env.EMULATOR_LATENCY_MS) {
    const latency = Number(env.EMULATOR_LATENCY_MS);
    if (!Number.isFinite(latency) || latency < 0) throw new CliError(`EMULATOR_LATENCY_MS must be a number of milliseconds >= 0, got "${env.EMULATOR_LATENCY_MS}"`);
    options.latencyMs = latency;
  }
  const format = env.EMULATOR_PAGE_REFERENCE_FORMAT;
  if (format) {
    if (!['absolute', 'relative', 'token'].includes(format)) throw new CliError(`EMULATOR_PAGE_REFERENCE_FORMAT must be absolute, relative or token, got "${format}"`);
    options.pageReferenceFormat = format as PageReferenceFormat;
  }
  return options;
}

/** The running CLI: the emulator, the tenants file it wrote, and a clean stop. */
export interface EmulatorCli {
  emulator: Emulator;
  tenantsFile: string;
  stop(): Promise<void>;
}

/** Starts the emulator as `npm run emulator` does, writes the tenants file and prints how to use it. */
export async function runEmulatorCli(env: Env = process.env, write: (text: string) => void = (text) => void process.stdout.write(text)): Promise<EmulatorCli> {
  const options = optionsFrom(env);
  const editEveryMs = editIntervalMs(env);
  const emulator = await startEmulator(options).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new CliError(`a port is already in use (${(error as Error).message}); set EMULATOR_AUTH_PORT / EMULATOR_SHARD_PORTS to free ports`);
    }
    throw error;
  });
  const entries = emulator.tenants.map((t) => ({ tenantId: t.tenantId, clientId: t.clientId, clientSecret: t.clientSecret, scope: t.grantedScopes.join(' ') }));
  const tenantsFile = join(mkdtempSync(join(tmpdir(), 'wfs-emulator-')), 'tenants.json');
  // Owner-only: the secrets are demo values, but the file shape is the production one.
  writeFileSync(tenantsFile, `${JSON.stringify(entries, null, 2)}\n`, { mode: 0o600 });

  const lines = [
    '',
    'Workforce-scheduling upstream emulator',
    '',
    `  Auth URL:        ${emulator.authUrl}`,
    `  Token endpoint:  ${emulator.tokenUrl}`,
    ...emulator.shardUrls.map((url, index) => `  Shard ${index}:         ${url}`),
    '',
    'Demo tenants (demo-only credentials):',
    ...emulator.tenants.flatMap((t, index) => [
      '',
      `  ${t.name}`,
      `    tenantId:      ${t.tenantId}`,
      `    clientId:      ${t.clientId}`,
      `    clientSecret:  ${t.clientSecret}`,
      `    scopes:        ${t.grantedScopes.join(' ') || '(none)'}`,
      `    shard:         ${t.shard} (${emulator.shardUrls[t.shard]})`,
      `    tenants entry: ${JSON.stringify(entries[index])}`,
    ]),
    '',
    'WFS_TENANTS_FILE contents (one line):',
    `  ${JSON.stringify(entries)}`,
    '',
    `Tenants file written to: ${tenantsFile}`,
    '',
    // With a cursor secret: production requires one, so the command shown is the habit to learn.
    'Run the subgraph against this emulator (in another terminal):',
    `  WFS_AUTH_URL=${emulator.authUrl} WFS_TENANTS_FILE=${tenantsFile} WFS_CURSOR_SECRET=$(openssl rand -hex 32) npm start`,
    '',
    editEveryMs === undefined
      ? 'The data never changes; EMULATOR_EDIT_INTERVAL_SECONDS=10 edits one shift of each company every 10 s (for live updates).'
      : `Every ${editEveryMs / 1000} s one shift of each company is edited (EMULATOR_EDIT_INTERVAL_SECONDS): subscribe to shiftChanges to see it.`,
    '',
    'Ctrl+C stops the emulator.',
    '',
  ];
  write(lines.join('\n'));
  const edits: ShiftChurn[] = editEveryMs === undefined ? [] : emulator.tenants.map((tenant) => startShiftChurn(tenant, editEveryMs));

  let stopping: Promise<void> | undefined;
  return {
    emulator,
    tenantsFile,
    stop() {
      for (const churn of edits) churn.stop();
      stopping ??= emulator.close().finally(() => rmSync(dirname(tenantsFile), { recursive: true, force: true }));
      return stopping;
    },
  };
}

async function main(): Promise<void> {
  const cli = await runEmulatorCli();
  const stop = () => {
    // If a close ever hangs, still leave: the user asked the process to stop.
    setTimeout(() => process.exit(1), 5_000).unref();
    void cli.stop().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    const message = error instanceof CliError ? error.message : `start-up failed: ${error instanceof Error ? error.message : String(error)}`;
    process.stderr.write(`wfs-emulator: ${message}\n`);
    process.exit(1);
  });
}
