/**
 * `npm run docs:configuration`: writes the table of docs/configuration.md, "Settings",
 * from the settings of src/config/ (settings.ts): one row per variable, in their order,
 * with its meaning and what applies when it is unset, as each entry says them (an
 * integer's range and default as the code applies them). test/unit/docs.test.ts fails
 * when the page's table is not this one; edit the entry, then run this.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SETTINGS } from '../src/config';

const PAGE = path.join(__dirname, '..', 'docs', 'configuration.md');

/** Variables the table lists that src/config/ does not read: OpenTelemetry's switch and SDK read them (docs/operations.md). */
const READ_ELSEWHERE = [
  {
    names: ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_TRACES_EXPORTER', 'OTEL_SERVICE_NAME', 'OTEL_*'],
    meaning: 'OpenTelemetry tracing, off unless one of the first two is set; see [Tracing](operations.md#tracing-opentelemetry)',
    whenUnset: 'off',
  },
];

/** The settings table, as docs/configuration.md holds it. */
export function configurationTable(): string {
  const rows = [
    ...Object.entries(SETTINGS).map(([name, setting]) => ({ names: [name], meaning: setting.meaning, whenUnset: setting.whenUnset })),
    ...READ_ELSEWHERE,
  ];
  const lines = rows.map((row) => `| ${row.names.map((name) => `\`${name}\``).join(', ')} | ${row.meaning} | ${row.whenUnset} |`);
  return ['| variable | meaning | default |', '|---|---|---|', ...lines].join('\n');
}

/** `page` with the table of its "Settings" section replaced by `table`. */
export function withSettingsTable(page: string, table: string): string {
  const section = page.indexOf('\n## Settings\n');
  if (section === -1) throw new Error('docs/configuration.md has no "## Settings" section');
  const start = page.indexOf('\n|', section) + 1;
  let end = start;
  while (page.startsWith('|', end)) end = page.indexOf('\n', end) + 1;
  return `${page.slice(0, start)}${table}\n${page.slice(end)}`;
}

if (process.argv.some((arg) => arg.endsWith('configurationTable.ts'))) {
  const page = readFileSync(PAGE, 'utf8');
  const written = withSettingsTable(page, configurationTable());
  writeFileSync(PAGE, written);
  process.stdout.write(written === page ? 'docs/configuration.md: the settings table was up to date\n' : 'docs/configuration.md: settings table written\n');
}
