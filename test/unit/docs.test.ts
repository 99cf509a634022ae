import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { KNOWN_ENV_VARIABLES, loadConfig, NUMERIC_SETTINGS, UPSTREAM_SETTINGS } from '../../src/config';
import { isSupportedNodeVersion } from '../../src/nodeVersion';
import { configurationTable, withSettingsTable } from '../../scripts/configurationTable';
import { headingAnchors, inlineCode, links, manualPages, markdownFiles, readDoc, repoRoot, section, shellBlocks, shellCommands } from '../helpers/markdown';

/**
 * The manual stays true to itself and to the code: every relative link and anchor of
 * the README and docs/*.md resolves, the settings page lists exactly the settings the
 * code knows with the defaults it applies, and every alert's runbook link lands on a
 * section of the runbook.
 */

describe('the manual (README.md and docs/*.md)', () => {
  const pages = manualPages();

  it('is a README of at most 300 lines that links every page of docs/', () => {
    const readme = readDoc('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    const linked = new Set(links(readme).map((target) => target.split('#')[0]));
    expect(pages.filter((page) => page !== 'README.md' && !linked.has(page))).toEqual([]);
  });

  it('has no relative link or anchor that leads nowhere', () => {
    const broken = pages.flatMap((page) =>
      links(readDoc(page))
        .filter((target) => !/^[a-z][a-z+.-]*:/i.test(target))
        .flatMap((target) => {
          const [file, anchor] = target.split('#') as [string, string | undefined];
          const resolved = file === '' ? page : path.normalize(path.join(path.dirname(page), file));
          const full = path.join(repoRoot, resolved);
          if (!existsSync(full)) return [`${page}: ${target} (no such file)`];
          if (anchor === undefined) return [];
          if (!resolved.endsWith('.md') || statSync(full).isDirectory()) return [`${page}: ${target} (an anchor in a file that is no page)`];
          return headingAnchors(readDoc(resolved)).has(anchor) ? [] : [`${page}: ${target} (no such anchor)`];
        }),
    );
    expect(broken).toEqual([]);
  });

  it('names only files of the repository that exist (src/, tools/, test/, scripts/, deploy/, ...)', () => {
    const missing = pages.flatMap((page) =>
      [...readDoc(page).matchAll(/`((?:src|tools|test|scripts|deploy|router|examples|operations|bench|docs)\/[\w./-]+\.(?:ts|mts|mjs|cjs|js|json|ya?ml|toml|md|graphql))`/g)]
        .map((match) => match[1]!)
        .filter((file) => !file.includes('timesheet') && !file.includes('Timesheet') && !existsSync(path.join(repoRoot, file)))
        .map((file) => `${page}: ${file}`),
    );
    expect(missing).toEqual([]);
  });

  it('holds no merge-conflict markers (a merge that left both sides of a line)', () => {
    const marked = pages.filter((page) => /^(<{7} |={7}$|>{7} )/m.test(readDoc(page)));
    expect(marked).toEqual([]);
  });

  it('gives no two sections of one page the same heading', () => {
    for (const page of pages) {
      const headings = [...readDoc(page).replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6}\s+(.+?)\s*$/gm)].map((match) => match[1]!);
      expect({ page, repeated: headings.filter((heading, index) => headings.indexOf(heading) !== index) }).toEqual({ page, repeated: [] });
    }
  });
});

/**
 * Each `npx` (or `npm exec`) of a command that runs it without `--yes`: npx asks before it
 * installs a package it does not find, and a non-interactive shell cannot answer, so npm
 * cancels ("npm error canceled"). With `--yes` it installs, or runs the local one, without asking.
 */
function promptingNpx(command: string): string[] {
  return [...command.matchAll(/(?:^|[\s;&|(])(npx|npm\s+exec)\s+((?:-[^\s]*(?:\s+[^-\s][^\s]*)?\s+)*)/g)]
    .filter((match) => !/(?:^|\s)(?:--yes|-y)(?:\s|$)/.test(` ${match[2]!}`))
    .map(() => command);
}

describe('install and run lines of README.md, docs/**/*.md and examples/**/*.md', () => {
  const files = markdownFiles();
  /** Every command of a shell block, and every inline code span, of each file. */
  const commands = files.flatMap((file) => {
    const text = readDoc(file);
    return [...shellBlocks(text).flatMap(shellCommands), ...inlineCode(text)].map((command) => ({ file, command }));
  });

  it('reads the commands of every page (the check has something to check)', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/supergraph.md', 'docs/frontend.md']));
    expect(commands.filter(({ command }) => /\bnpx\b/.test(command)).length).toBeGreaterThanOrEqual(4);
  });

  it('finds the npx lines that would stop for a prompt', () => {
    expect(promptingNpx('npx -p node@24 npm ci')).toHaveLength(1);
    expect(promptingNpx('FOO=1 npx hive-gateway supergraph x.graphql -p 4000')).toHaveLength(1);
    expect(promptingNpx('cd examples/relay && npm exec relay-compiler')).toHaveLength(1);
    expect(promptingNpx('npx --yes -p node@24 npm ci')).toEqual([]);
    expect(promptingNpx('npx -y -p "node@24" -c \'npm ci\'')).toEqual([]);
    expect(promptingNpx('npx -p node@24 --yes npm ci')).toEqual([]);
  });

  it('has no npx that would stop for a prompt in a non-interactive shell (each says --yes)', () => {
    expect(commands.flatMap(({ file, command }) => promptingNpx(command).map((line) => `${file}: ${line}`))).toEqual([]);
  });

  it('installs no package with `npm install --no-save` that package.json already brings', () => {
    const manifest = JSON.parse(readDoc('package.json')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    const declared = new Set([...Object.keys(manifest.dependencies), ...Object.keys(manifest.devDependencies)]);
    const redundant = commands.flatMap(({ file, command }) =>
      [...command.matchAll(/npm\s+(?:install|i)\s+--no-save\s+([^\s]+)/g)]
        .map((match) => match[1]!.replace(/(?!^)@[^@/]*$/, ''))
        .filter((name) => declared.has(name))
        .map((name) => `${file}: ${name}`),
    );
    expect(redundant).toEqual([]);
  });
});

describe('docs/configuration.md', () => {
  const settings = section(readDoc('docs/configuration.md'), 'Settings');
  /** Each row of the settings table: the names in its first column, and its default column. */
  const rows = settings
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const cells = line.slice(1, -1).split(' | ');
      return { names: [...cells[0]!.matchAll(/`([A-Z][A-Z0-9_]*)\*?`/g)].map((match) => match[1]!), meaning: cells[1]!, default: cells[cells.length - 1]! };
    });
  const named = rows.flatMap((row) => row.names);

  it("is the table of src/config/'s settings, entry by entry (`npm run docs:configuration` writes it)", () => {
    const page = readDoc('docs/configuration.md');
    expect(withSettingsTable(page, configurationTable())).toBe(page);
  });

  it('lists exactly the WFS_* settings of KNOWN_ENV_VARIABLES, each once', () => {
    const wfs = named.filter((name) => name.startsWith('WFS_'));
    expect([...wfs].sort()).toEqual([...KNOWN_ENV_VARIABLES].sort());
    expect(new Set(wfs).size).toBe(wfs.length);
  });

  it('lists, besides them, only the standard variables the subgraph reads', () => {
    expect(named.filter((name) => !name.startsWith('WFS_')).sort()).toEqual(
      ['HOST', 'LOG_LEVEL', 'NODE_ENV', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_SERVICE_NAME', 'OTEL_TRACES_EXPORTER', 'OTEL_', 'PORT'].sort(),
    );
  });

  it('names, under "Demo mode", every setting that stops a start-up without WFS_AUTH_URL', () => {
    const demo = section(readDoc('docs/configuration.md'), 'Demo mode');
    expect(UPSTREAM_SETTINGS.filter((name) => !demo.includes(`\`${name}\``))).toEqual([]);
  });

  it("states each numeric setting's default and range as src/config/ applies them", () => {
    const spaced = (n: number) => n.toLocaleString('en-US').replace(/,/g, ' ');
    for (const [name, { default: fallback, min, max }] of Object.entries(NUMERIC_SETTINGS)) {
      const row = rows.find((candidate) => candidate.names.includes(name))!;
      expect({ name, default: row.default.trim() }).toEqual({ name, default: `\`${fallback}\`` });
      expect({ name, range: row.meaning.includes(`${spaced(min)} to ${spaced(max)}`) }).toEqual({ name, range: true });
    }
    // Where another page restates a default beside its setting, it is the same number.
    for (const page of manualPages()) {
      const text = readDoc(page);
      for (const [name, { default: fallback }] of Object.entries(NUMERIC_SETTINGS)) {
        const restated = [
          ...text.matchAll(new RegExp(`\`${name}\`\\s*\\((?:default\\s+)?(\\d[\\d ]*)`, 'g')),
          ...text.matchAll(new RegExp(`\\(\`${name}\`,\\s*(\\d[\\d ]*)`, 'g')),
          ...text.matchAll(new RegExp(`(\\d[\\d ]*?)\\s*\\(\`${name}\`\\)`, 'g')),
        ].map((match) => Number(match[1]!.replace(/ /g, '')));
        expect({ page, name, restated: restated.filter((value) => value !== fallback) }).toEqual({ page, name, restated: [] });
      }
    }
    // The other defaults a plain start applies.
    const defaults = loadConfig({});
    const stated = (name: string) => rows.find((row) => row.names[0] === name)!.default;
    expect(stated('PORT')).toContain(`\`${defaults.port}\``);
    expect(stated('HOST')).toContain(`\`${defaults.host}\``);
    expect(stated('LOG_LEVEL')).toContain(`\`${defaults.logLevel}\``);
    expect(stated('WFS_TENANT_HEADER')).toContain(`\`${defaults.tenantHeader}\``);
  });
});

describe("README.md's start line against a real upstream", () => {
  // A bare `node` is the host's (Node 20 on many), which stops at start: the line runs the project's own.
  it("runs the project's Node (node_modules/.bin/node, a supported version) with the Dockerfile CMD's flags and entry", () => {
    const lines = shellBlocks(readDoc('README.md')).flatMap(shellCommands).filter((line) => /\bdist\/index\.js\b/.test(line));
    expect(lines).toHaveLength(1);
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8'))![1]!) as string[];
    const command = lines[0]!.replace(/\b[A-Z_]+=(\$\([^)]*\)|\S+)/g, '').trim().split(/\s+/);
    expect(command).toEqual(['node_modules/.bin/node', ...cmd.slice(1)]);
    const version = execFileSync(path.join(repoRoot, 'node_modules', '.bin', 'node'), ['--version'], { encoding: 'utf8' }).trim();
    expect(isSupportedNodeVersion(version.slice(1))).toBe(true);
  });
});

describe("docs/configuration.md, the emulator's settings", () => {
  const emulatorDir = path.join(repoRoot, 'tools', 'emulator');
  const read = [...new Set(readdirSync(emulatorDir).filter((file) => file.endsWith('.ts')).flatMap((file) => [...readFileSync(path.join(emulatorDir, file), 'utf8').matchAll(/\benv\.(EMULATOR_[A-Z0-9_]+)/g)].map((match) => match[1]!)))];
  const table = section(readDoc('docs/configuration.md'), "The emulator's settings");
  const listed = table.split('\n').filter((line) => line.startsWith('| `')).map((line) => /^\| `([A-Z0-9_]+)`/.exec(line)![1]!);

  it('lists exactly the EMULATOR_* variables tools/emulator/ reads, each once', () => {
    expect(read.length).toBeGreaterThanOrEqual(6);
    expect([...listed].sort()).toEqual([...read].sort());
  });
});

describe('docs/runbook.md', () => {
  type Rule = { alert?: string; annotations?: Record<string, string> };
  const rules = (file: string): Rule[] =>
    (parseYaml(readFileSync(path.join(repoRoot, file), 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((group) => group.rules);
  const anchors = headingAnchors(readDoc('docs/runbook.md'));
  const runbookCodes = [...readDoc('docs/runbook.md').matchAll(/^## ([A-Z_]+)$/gm)].map((match) => match[1]!);

  it("has the section every alert's runbook_url names", () => {
    const alerts = rules('deploy/prometheus/alerts.yaml').filter((rule) => rule.alert);
    expect(alerts.length).toBeGreaterThan(5);
    for (const rule of alerts) {
      const url = rule.annotations?.['runbook_url'] ?? '';
      expect({ alert: rule.alert, page: url.slice(0, url.indexOf('#')) }).toEqual({ alert: rule.alert, page: expect.stringMatching(/\/docs\/runbook\.md$/) });
      const anchor = url.slice(url.indexOf('#') + 1);
      // A templated anchor names the alert's error code: each code the rule can report has its section.
      const matcher = /code=~\\?"([^"\\]+)\\?"/.exec(JSON.stringify(rule))?.[1];
      const codes = matcher ? runbookCodes.filter((code) => new RegExp(`^(?:${matcher})$`).test(code)) : [];
      if (anchor.includes('{{ $labels.code }}')) expect({ alert: rule.alert, codes: codes.length > 0 }).toEqual({ alert: rule.alert, codes: true });
      const names = anchor.includes('{{ $labels.code }}') ? codes.map((code) => anchor.replace('{{ $labels.code }}', code)) : [anchor];
      for (const name of names) expect({ alert: rule.alert, anchor: name, found: anchors.has(name) }).toEqual({ alert: rule.alert, anchor: name, found: true });
    }
  });

  it('keeps a stable runbook-<code> anchor for every error code the subgraph sends', () => {
    expect(runbookCodes.length).toBeGreaterThan(8);
    for (const code of runbookCodes) expect({ code, anchored: anchors.has(`runbook-${code}`) }).toEqual({ code, anchored: true });
  });
});

describe('docs/upstream.md', () => {
  const page = readDoc('docs/upstream.md');

  it('holds each assumption once, each with the modules that hold it', () => {
    const assumptions = section(page, 'What we assume where the documentation is silent');
    const headings = [...assumptions.matchAll(/^### (.+)$/gm)].map((match) => match[1]!);
    expect(headings.length).toBeGreaterThanOrEqual(15);
    for (const heading of headings) expect({ heading, where: /^Where: `src\//m.test(section(assumptions, heading)) }).toEqual({ heading, where: true });
    // No other page repeats them as a table.
    for (const other of manualPages().filter((file) => file !== 'docs/upstream.md')) expect({ other, table: readDoc(other).includes('| open point | assumption |') }).toEqual({ other, table: false });
  });

  it("points the operator's hint at the module that writes it", () => {
    const where = /^Where: `([^`]+)`/m.exec(section(page, 'Error messages'))![1]!;
    expect(readFileSync(path.join(repoRoot, where), 'utf8')).toMatch(/configuration error: [^']*check its entry in WFS_TENANTS_FILE/);
  });
});
