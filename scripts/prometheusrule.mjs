// The alert rules' build step. Writes the Kubernetes PrometheusRule (prometheus-operator)
// holding the groups of deploy/prometheus/alerts.yaml into the optional kustomize
// component deploy/k8s/components/alerts/, with every `runbook_url` annotation under a
// base URL of your choice (where your team reads docs/runbook.md):
//
//   node scripts/prometheusrule.mjs [--runbook-base URL] [--out-dir DIR] [--rules-out FILE]
//
// --runbook-base  replaces what precedes `#` in each runbook_url; default: docs/runbook.md
//                 on the main branch of package.json's `repository` (runbookBase below),
//                 which the committed files use
// --out-dir       where prometheusrule.yaml goes (default deploy/k8s/components/alerts)
// --rules-out     also writes the plain Prometheus rules file with that base
//
// Run it with no option after editing alerts.yaml or package.json's `repository`: it then
// also puts the runbook base into alerts.yaml and alerts.test.yaml.
// test/integration/dashboards.test.ts fails while the committed files differ from what
// this writes.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parse, stringify } from 'yaml';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    'runbook-base': { type: 'string' },
    'out-dir': { type: 'string' },
    'rules-out': { type: 'string' },
  },
});

/**
 * The runbook's address in this repository: package.json's `repository` (a git URL on a
 * GitHub-style host), its `blob/main/docs/runbook.md`. Change `repository` there and run
 * this script: the committed rules follow (test/integration/dashboards.test.ts compares).
 */
function runbookBase() {
  const { repository } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const url = (typeof repository === 'string' ? repository : repository?.url ?? '').replace(/^git\+/, '').replace(/\.git$/, '');
  if (!/^https:\/\/[^\s#]+$/.test(url)) throw new Error(`package.json: "repository" must be an https git URL, got "${url}"`);
  return `${url}/blob/main/docs/runbook.md`;
}

const base = values['runbook-base'] ?? runbookBase();
if (!/^https?:\/\/[^\s#]+$/.test(base)) {
  process.stderr.write(`prometheusrule: --runbook-base must be an http(s) URL without a #fragment, got "${base}"\n`);
  process.exit(1);
}

// Regenerating the committed files (no option): the rules' source and its promtool tests
// take the same base.
const committed = values['runbook-base'] === undefined && values['out-dir'] === undefined;
const outDir = values['out-dir'] ?? join(root, 'deploy', 'k8s', 'components', 'alerts');
if (committed) {
  for (const file of ['alerts.yaml', 'alerts.test.yaml']) {
    const path = join(root, 'deploy', 'prometheus', file);
    const text = readFileSync(path, 'utf8');
    const rebased = text.replace(/(runbook_url: ')[^'#]*#/g, `$1${base}#`);
    if (rebased !== text) writeFileSync(path, rebased);
  }
}

const { groups } = parse(readFileSync(join(root, 'deploy', 'prometheus', 'alerts.yaml'), 'utf8'));
for (const rule of groups.flatMap((group) => group.rules)) {
  const url = rule.annotations?.runbook_url;
  if (url) rule.annotations.runbook_url = `${base}${url.slice(url.indexOf('#'))}`;
}

const rule = {
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'PrometheusRule',
  metadata: {
    name: 'wfs-subgraph',
    labels: { 'app.kubernetes.io/name': 'wfs-subgraph', 'app.kubernetes.io/component': 'alerts' },
  },
  spec: { groups },
};
const header = '# Generated from deploy/prometheus/alerts.yaml by scripts/prometheusrule.mjs; edit alerts.yaml and rerun it.\n';
mkdirSync(resolve(outDir), { recursive: true });
writeFileSync(join(resolve(outDir), 'prometheusrule.yaml'), header + stringify(rule, { lineWidth: 0 }));
if (values['rules-out']) {
  writeFileSync(resolve(values['rules-out']), '# Generated from deploy/prometheus/alerts.yaml by scripts/prometheusrule.mjs.\n' + stringify({ groups }, { lineWidth: 0 }));
}
