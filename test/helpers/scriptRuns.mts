/**
 * Runs a Node script several times, one run after another, in this one process:
 *
 *   node test/helpers/scriptRuns.mts <script> '<JSON array of argument lists>'
 *
 * and prints a JSON array of { status, stdout, stderr }, one per run. Each run imports
 * the script afresh (its own module instance) with its own process.argv, and reads what
 * it wrote to process.stdout and process.stderr and the process.exitCode it set (1 if it
 * threw), as separate processes would show them; the modules it imports load once. For
 * scripts that report only that way (scripts/compose.mts), this is one Node start and one
 * load of @apollo/composition for a test file instead of one per run.
 */
import { pathToFileURL } from 'node:url';
import path from 'node:path';

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

const [script, runsJson] = process.argv.slice(2);
if (!script || !runsJson) throw new Error('usage: node test/helpers/scriptRuns.mts <script> <JSON array of argument lists>');
const scriptPath = path.resolve(script);
const argumentLists = JSON.parse(runsJson) as string[][];
const runs: Run[] = [];

for (const [index, args] of argumentLists.entries()) {
  const run: Run = { status: 0, stdout: '', stderr: '' };
  const capture = (stream: 'stdout' | 'stderr') => (chunk: string | Uint8Array) => {
    run[stream] += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    return true;
  };
  const { write: stdoutWrite } = process.stdout;
  const { write: stderrWrite } = process.stderr;
  process.argv = [process.argv[0]!, scriptPath, ...args];
  process.exitCode = undefined;
  process.stdout.write = capture('stdout') as typeof process.stdout.write;
  process.stderr.write = capture('stderr') as typeof process.stderr.write;
  try {
    await import(`${pathToFileURL(scriptPath).href}?run=${index}`);
    run.status = Number(process.exitCode ?? 0);
  } catch (error) {
    run.stderr += `${error instanceof Error ? error.stack : String(error)}\n`;
    run.status = 1;
  } finally {
    process.stdout.write = stdoutWrite;
    process.stderr.write = stderrWrite;
  }
  runs.push(run);
}

process.exitCode = 0;
process.stdout.write(JSON.stringify(runs));
