import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { demoTenants } from '../../tools/emulator';
import { as } from '../helpers/fixtures';
import { errorCodes, postGraphQL } from '../helpers/postGraphQL';
import { waitFor } from '../helpers/waitFor';

/**
 * The proof of docs/adding-a-resource.md: in a copy of the repository, a
 * newcomer's timesheets written through the page's steps alone (no hook of any
 * kind), the commands the page lists, run as listed, and the built server started as
 * a deployment starts it. The resource must then be served like the registry's own, and
 * `Location.shifts` must survive `Location.timesheets` being added by another file.
 */

const root = join(__dirname, '..', '..');
/** A command the page lists may take this long on a loaded 2-core machine; then it is killed. */
const COMMAND_TIMEOUT_MS = 240_000;
jest.setTimeout(COMMAND_TIMEOUT_MS * 3);

/** docs/adding-a-resource.md, the page these steps follow. */
const section = readFileSync(join(root, 'docs', 'adding-a-resource.md'), 'utf8');
const commands = (/```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '').split('\n').map((line) => line.replace(/#.*/, '').trim()).filter(Boolean);

/** The page's commands that write nothing another of them reads. */
const READERS = new Set(['npm run lint', 'npm run typecheck', 'npm run build']);

/**
 * `npm run lint` in the copy lints the files the steps and the commands before it wrote
 * or changed, not the whole tree again: the ESLint config reads no type information
 * (eslint.config.mjs; a test below checks it still reads none), so a file's
 * findings depend on its own text and the config alone, and every other file is
 * byte-identical to the checkout's, which the test line lints itself (`npm run lint`,
 * scripts/test.sh). The same command, on the files it could find something new in: the
 * whole tree again cost 14 of this suite's 40 CPU-seconds.
 */
const LINT = 'npm run lint';
const lintScript = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.lint!;
const lintWords = lintScript.split(/\s+/);
/** What the lint script names (files and folders): the words after `eslint` that are neither an option nor an option's value. */
const lintTargets = lintWords.filter((word, index) => index > 0 && !word.startsWith('-') && !lintWords[index - 1]!.startsWith('--max'));
/** The lint script's options (`--max-warnings 0`). */
const lintOptions = lintWords.filter((word, index) => index > 0 && !lintTargets.includes(word));

/** The lint script's command and options, on the files of `changed` it covers. */
function lintCommand(changed: readonly string[]): string {
  const files = changed.filter((file) => lintTargets.some((target) => file === target || file.startsWith(`${target}/`)));
  // An ignored file named on the command line (src/__generated__) is skipped, not warned about.
  return ['node_modules/.bin/eslint', ...lintOptions, '--no-warn-ignored', ...files].join(' ');
}

/** One step of the page: a file to write, or to edit at a place that must exist. */
type Step = { file: string; write: string } | { file: string; edits: ReadonlyArray<readonly [anchor: string, replacement: string]> };

const TIMESHEET_MODULE = `import { recordWithId, referenceId } from './fields';
import { defineResource, isMalformed, type MalformedRecord } from './resource';

/** A timesheet: minutes worked on one shift, at one location. */
export interface TimesheetRecord {
  readonly id: string;
  readonly minutes: number | null;
  readonly shiftId: string | null;
  readonly locationId: string | null;
}

export type TimesheetFilter = { readonly locationId?: string };

function toTimesheetRecord(item: unknown): TimesheetRecord | MalformedRecord {
  const record = recordWithId(item, 'timesheet');
  if (isMalformed(record)) return record;
  const { raw, id } = record;
  return { id, minutes: typeof raw.minutes === 'number' ? raw.minutes : null, shiftId: referenceId(raw.shift), locationId: referenceId(raw.location) };
}

/** Timesheets (docs/upstream.md, "List endpoints" names their scope; their fields are this example's). */
export const timesheets = defineResource<TimesheetRecord, TimesheetFilter, 'timesheets'>({
  name: 'timesheets',
  typename: 'Timesheet',
  path: '/api/public/v1/timesheets/',
  scope: 'timesheets.read',
  map: toTimesheetRecord,
  matches: (record, filter) => filter.locationId === undefined || record.locationId === filter.locationId,
  filterFrom: (input) => (input.locationId == null ? {} : { locationId: String(input.locationId) }),
});
`;

const TIMESHEET_RESOLVERS = `import type { LocationResolvers, TimesheetResolvers } from '../../__generated__/resolvers-types';
import { locations, shifts, timesheets } from '../../upstream/resources';
import { childConnection, loadEntity } from './resourceResolvers';

/** Timesheet's relations; its connection, lookup and \`__resolveReference\` come from the registry. */
export const Timesheet: TimesheetResolvers = {
  shift: (sheet, _args, context) => (sheet.shiftId ? loadEntity(context, shifts, sheet.shiftId) : null),
  location: (sheet, _args, context) => (sheet.locationId ? loadEntity(context, locations, sheet.locationId) : null),
};

/** A location's timesheets, beside its shifts (Location.ts). */
export const Location: LocationResolvers = {
  timesheets: childConnection(timesheets, 'Location', 'locationId'),
};
`;

const PAGING_ARGUMENTS = `
    "Page size, counted forward from the start or from \`after\`: 1 to 100."
    first: Int
    "A cursor from this list: the page starts right after that edge."
    after: String`;

const STEPS: readonly Step[] = [
  { file: 'src/upstream/resources/timesheet.ts', write: TIMESHEET_MODULE },
  {
    file: 'src/upstream/resources/index.ts',
    edits: [
      ["import { shifts } from './shift';", "import { shifts } from './shift';\nimport { timesheets } from './timesheet';"],
      ['export const RESOURCES = [locations, shifts] as const;', 'export const RESOURCES = [locations, shifts, timesheets] as const;'],
      ["export { shifts, type ShiftFilter, type ShiftRecord } from './shift';", "export { shifts, type ShiftFilter, type ShiftRecord } from './shift';\nexport { timesheets, type TimesheetRecord } from './timesheet';"],
    ],
  },
  {
    file: 'schema.graphql',
    edits: [
      [
        '  shift("The upstream id of the shift, as `Shift.id` gives it." id: ID!): Shift\n',
        `  shift("The upstream id of the shift, as \`Shift.id\` gives it." id: ID!): Shift
  "The company's timesheets, in upstream order. Needs the \`timesheets.read\` scope."
  timesheets(${PAGING_ARGUMENTS}
    "Page size, counted backward from the end or from \`before\`: 1 to 100."
    last: Int
    "A cursor from this list: the page ends right before that edge."
    before: String
  ): TimesheetConnection
    @listSize(slicingArguments: ["first", "last"], sizedFields: ["edges", "nodes"], assumedSize: 100, requireOneSlicingArgument: false)
  "One timesheet by id, or null when the company has no such timesheet."
  timesheet("The upstream id of the timesheet." id: ID!): Timesheet
`,
      ],
      [
        '  ): ShiftConnection\n    @listSize(slicingArguments: ["first"], sizedFields: ["edges", "nodes"], assumedSize: 100, requireOneSlicingArgument: false)\n}\n\n"Which shifts to list.',
        `  ): ShiftConnection
    @listSize(slicingArguments: ["first"], sizedFields: ["edges", "nodes"], assumedSize: 100, requireOneSlicingArgument: false)
  "The timesheets of this location, in upstream order. Needs the \`timesheets.read\` scope."
  timesheets(${PAGING_ARGUMENTS}
  ): TimesheetConnection
    @listSize(slicingArguments: ["first"], sizedFields: ["edges", "nodes"], assumedSize: 100, requireOneSlicingArgument: false)
}

"Which shifts to list.`,
      ],
      [
        '"A page of the company\'s locations (a Relay connection)."',
        `"Minutes worked on one shift."
type Timesheet @key(fields: "id") {
  "The upstream's id of the timesheet; the federation key."
  id: ID! @cost(weight: 1)
  "The minutes worked; null when the upstream has none."
  minutes: Int @cost(weight: 1)
  "The shift worked; null when the upstream no longer lists it."
  shift: Shift
  "Where it was worked; null when the upstream no longer lists it."
  location: Location
}

"A page of timesheets (a Relay connection)."
type TimesheetConnection {
  "The timesheets of this page with their cursors."
  edges: [TimesheetEdge!]!
  "The timesheets of this page."
  nodes: [Timesheet!]!
  "Whether there are more timesheets before or after this page."
  pageInfo: PageInfo!
}

"One timesheet in a page, with its cursor."
type TimesheetEdge {
  "Opaque; pass it as \`after\` or \`before\`."
  cursor: String! @cost(weight: 1)
  "The timesheet."
  node: Timesheet!
}

"A page of the company's locations (a Relay connection)."`,
      ],
    ],
  },
  { file: 'src/graphql/resolvers/Timesheet.ts', write: TIMESHEET_RESOLVERS },
  {
    file: 'src/graphql/resolvers/index.ts',
    edits: [
      ["import * as Shift from './Shift';", "import * as Shift from './Shift';\nimport * as Timesheet from './Timesheet';"],
      ['mergeTypeModules({ DateTime, Location, Shift })', 'mergeTypeModules({ DateTime, Location, Shift, Timesheet })'],
    ],
  },
  {
    file: 'tools/emulator/seed.ts',
    edits: [
      ["import type { EmulatorLocation, EmulatorShift, EmulatorTenant } from './types';", "import type { EmulatorLocation, EmulatorRecord, EmulatorShift, EmulatorTenant } from './types';"],
      [
        'export function demoTenants(): EmulatorTenant[] {\n  return [harbourLaneCoffee(), northfieldCareHomes(), alpenrose(), mapleRidgeGrocers()];',
        `function withTimesheets(tenant: EmulatorTenant, count: number): EmulatorTenant {
  const timesheets: EmulatorRecord[] = tenant.shifts
    .slice(0, count)
    .map((shift, index) => ({ object: 'timesheet', id: \`ts_\${shift.id}\`, shift: shift.id, location: { id: shift.location }, minutes: 420 + (index % 5) * 15 }));
  return { ...tenant, timesheets };
}

export function demoTenants(): EmulatorTenant[] {
  return [harbourLaneCoffee(), withTimesheets(northfieldCareHomes(), 40), alpenrose(), mapleRidgeGrocers()];`,
      ],
    ],
  },
  {
    file: 'test/unit/resources.test.ts',
    edits: [["      ['shifts', 'Shift', '/api/public/v1/shifts/', 'shifts.read'],\n", "      ['shifts', 'Shift', '/api/public/v1/shifts/', 'shifts.read'],\n      ['timesheets', 'Timesheet', '/api/public/v1/timesheets/', 'timesheets.read'],\n"]],
  },
];

/** The repository's files as a newcomer has them (tracked, and new ones not ignored), with node_modules linked. */
function copyRepository(): string {
  const copy = mkdtempSync(join(tmpdir(), 'wfs-add-resource-'));
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' }).split('\0').filter(Boolean);
  for (const file of files) {
    if (!existsSync(join(root, file))) continue; // deleted in the work tree, not yet committed
    mkdirSync(dirname(join(copy, file)), { recursive: true });
    copyFileSync(join(root, file), join(copy, file));
  }
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'), 'dir');
  return copy;
}

function applyStep(dir: string, step: Step): void {
  const path = join(dir, step.file);
  if ('write' in step) {
    if (existsSync(path)) throw new Error(`${step.file} already exists`);
    writeFileSync(path, step.write);
    return;
  }
  let text = readFileSync(path, 'utf8');
  for (const [anchor, replacement] of step.edits) {
    if (!text.includes(anchor)) throw new Error(`${step.file} no longer contains ${JSON.stringify(anchor)}: update this test's step`);
    text = text.replace(anchor, replacement);
  }
  writeFileSync(path, text);
}

/** Runs one command the page lists, as a shell runs it, in `dir`; its output on failure. */
function run(dir: string, command: string): Promise<void> {
  // Not the outer `npm test`'s own npm_* settings: the command runs as typed in a terminal.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('npm_')));
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd: dir, env, timeout: COMMAND_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += String(chunk)));
    child.stderr.on('data', (chunk) => (output += String(chunk)));
    child.on('error', reject);
    child.on('close', (code, signal) => (code === 0 ? resolve() : reject(new Error(`\`${command}\` failed (${signal ?? `exit ${code}`}):\n${output.slice(-4000)}`))));
  });
}

/** The files of `copy` that are new or differ from the checkout's (node_modules and dist aside). */
function changedFiles(copy: string): string[] {
  const original = new Set(filesUnder(root));
  return filesUnder(copy).filter((file) => !original.has(file) || !readFileSync(join(copy, file)).equals(readFileSync(join(root, file))));
}

/** Every file under `dir` but node_modules and dist, relative. */
function filesUnder(dir: string, under = ''): string[] {
  return readdirSync(join(dir, under), { withFileTypes: true }).flatMap((entry) => {
    const path = under ? `${under}/${entry.name}` : entry.name;
    if (path === 'node_modules' || path === 'dist' || path === '.git') return [];
    return entry.isDirectory() ? filesUnder(dir, path) : [path];
  });
}

interface Server {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  exit: Promise<number | null>;
}

// The seed step: Northfield Care Homes has a timesheet for each of its first 40 shifts.
const northfield = demoTenants()[1]!;
const harbourLane = demoTenants()[0]!;
const SHEETS = northfield.shifts.slice(0, 40).map((shift) => ({ id: `ts_${shift.id}`, shift: shift.id, location: shift.location }));

let copy: string | undefined;
let server: Server | undefined;
let url = '';
const query = (text: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = as(northfield)) => postGraphQL(url, { query: text, variables }, headers);

beforeAll(async () => {
  copy = copyRepository();
  for (const step of STEPS) applyStep(copy, step);
  // In the page's order, but the commands that only read the tree (the lint, the typecheck,
  // and the build, which writes dist/ that the other two leave out) run side by side once
  // codegen and compose have written what they read, as the test line runs them: the
  // same commands, taking the longest of them rather than their sum.
  for (let next = 0; next < commands.length; ) {
    let end = next + 1;
    if (READERS.has(commands[next]!)) while (end < commands.length && READERS.has(commands[end]!)) end += 1;
    await Promise.all(commands.slice(next, end).map((command) => run(copy!, command === LINT ? lintCommand(changedFiles(copy!)) : command)));
    next = end;
  }

  const child = spawn(process.execPath, [join(copy, 'dist', 'index.js')], { cwd: copy, env: { PATH: process.env.PATH ?? '', PORT: '0' } });
  let output = '';
  child.stdout.on('data', (chunk) => (output += String(chunk)));
  child.stderr.on('data', (chunk) => (output += String(chunk)));
  server = { child, output: () => output, exit: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
  await waitFor(() => /GraphQL:\s+http:\S+/.test(output) || child.exitCode !== null, 'the built server to start');
  url = /GraphQL:\s+(http:\S+)/.exec(output)?.[1] ?? '';
  if (!url) throw new Error(`the built server did not start:\n${output}`);
});

afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill('SIGKILL');
    await server.exit;
  }
  if (copy) rmSync(copy, { recursive: true, force: true });
});

describe('docs/adding-a-resource.md, followed to the letter in a copy of the repository', () => {
  it('lists the commands, and names every file they and the steps change', () => {
    expect(commands).toEqual(expect.arrayContaining(['npm run codegen', 'npm run compose', 'npm run build']));
    for (const step of STEPS) expect(section).toContain(`\`${step.file}\``);
    const changed = changedFiles(copy!);
    expect(changed).toEqual(expect.arrayContaining(['src/__generated__/resolvers-types.ts', 'supergraph.graphql', 'supergraph.api.graphql']));
    expect(changed.filter((file) => !section.includes(`\`${file}\``))).toEqual([]);
  });

  it("built the checkout's explorer assets (the same sources make the same files, copied from the build's cache when it has them)", () => {
    const manifest = (dir: string) => readFileSync(join(dir, 'dist', 'explorer', 'assets', 'manifest.json'), 'utf8');
    expect(manifest(copy!)).toBe(manifest(root));
  });

  it('linted what changed, with a lint that reads no type information (so the unchanged files are the checkout\'s, linted by the line)', () => {
    expect(commands).toContain(LINT);
    expect(lintScript).toMatch(/^eslint /);
    expect(lintTargets).toEqual(expect.arrayContaining(['schema.graphql', 'src', 'test']));
    const lint = lintCommand(changedFiles(copy!)).split(' ');
    expect(lint).toEqual(expect.arrayContaining(['--max-warnings', 'schema.graphql', 'src/upstream/resources/timesheet.ts', 'src/graphql/resolvers/Timesheet.ts']));
    expect(lint).not.toContain('src');
    const config = readFileSync(join(root, 'eslint.config.mjs'), 'utf8');
    // typescript-eslint reads types only with one of these (or a `recommendedTypeChecked`-style preset).
    expect(config).not.toMatch(/projectService|\bproject\s*:|TypeChecked|parserOptions/);
  });

  it('serves the new list, paged forward and backward', async () => {
    const PAGE = `query ($first: Int, $after: String, $last: Int, $before: String) {
      timesheets(first: $first, after: $after, last: $last, before: $before) { nodes { id } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } }
    }`;
    const forward: string[] = [];
    for (let after: string | null = null, more = true; more; ) {
      const page = await query(PAGE, { first: 15, after });
      expect(page.errors).toBeUndefined();
      forward.push(...page.data.timesheets.nodes.map((node: { id: string }) => node.id));
      ({ hasNextPage: more, endCursor: after } = page.data.timesheets.pageInfo);
    }
    expect(forward).toEqual(SHEETS.map((sheet) => sheet.id));

    const backward: string[] = [];
    for (let before: string | null = null, more = true; more; ) {
      const page = await query(PAGE, { last: 15, before });
      expect(page.errors).toBeUndefined();
      backward.unshift(...page.data.timesheets.nodes.map((node: { id: string }) => node.id));
      ({ hasPreviousPage: more, startCursor: before } = page.data.timesheets.pageInfo);
    }
    expect(backward).toEqual(forward);
  });

  it('serves its relations, and Location.shifts beside the Location.timesheets another file adds', async () => {
    const location = SHEETS[0]!.location;
    const answer = await query(
      `query ($id: ID!) {
        timesheets(first: 3) { nodes { id minutes shift { id } location { id name } } }
        location(id: $id) { id shifts(first: 2) { nodes { id location { id } } } timesheets(first: 50) { nodes { id location { id } } } }
      }`,
      { id: location },
    );
    expect(answer.errors).toBeUndefined();
    expect(answer.data.timesheets.nodes.map((n: { shift: { id: string }; location: { id: string } }) => [n.shift.id, n.location.id])).toEqual(
      SHEETS.slice(0, 3).map((sheet) => [sheet.shift, sheet.location]),
    );
    expect(answer.data.location.shifts.nodes).toEqual(northfield.shifts.filter((s) => s.location === location).slice(0, 2).map((s) => ({ id: s.id, location: { id: location } })));
    expect(answer.data.location.timesheets.nodes).toEqual(SHEETS.filter((s) => s.location === location).map((s) => ({ id: s.id, location: { id: location } })));
  });

  it('resolves it as an entity, null for an id the company does not have', async () => {
    const wanted = [SHEETS[30]!.id, 'ts_unknown', SHEETS[2]!.id];
    const answer = await query('query ($r: [_Any!]!) { _entities(representations: $r) { ... on Timesheet { id } } }', { r: wanted.map((id) => ({ __typename: 'Timesheet', id })) });
    expect(answer.errors).toBeUndefined();
    expect(answer.data._entities).toEqual([{ id: wanted[0] }, null, { id: wanted[2] }]);
  });

  it('enforces its scope: FORBIDDEN for a company without timesheets.read, its other fields served', async () => {
    const answer = await query('{ timesheets(first: 2) { nodes { id } } locations(first: 2) { nodes { id } } }', {}, as(harbourLane));
    expect(errorCodes(answer)).toEqual(['FORBIDDEN']);
    expect(answer.data).toEqual({ timesheets: null, locations: { nodes: harbourLane.locations.slice(0, 2).map((l) => ({ id: l.id })) } });
  });

});
