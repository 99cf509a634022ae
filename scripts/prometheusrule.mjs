// The alert rules' build step. Writes the Kubernetes PrometheusRule (prometheus-operator)
// holding the groups of deploy/prometheus/alerts.yaml into the optional kustomize
// component deploy/k8s/components/alerts/, with every `runbook_url` annotation under a
// base URL of your choice (where your team reads the README's runbook):
//
//   node scripts/prometheusrule.mjs [--runbook-base URL] [--out-dir DIR] [--rules-out FILE]
//
// --runbook-base  replaces what precedes `#` in each runbook_url; default: the base in
//                 alerts.yaml (this repository's README), which the committed files use
// --out-dir       where prometheusrule.yaml goes (default deploy/k8s/components/alerts)
// --rules-out     also writes the plain Prometheus rules file with that base
//
// Run it after editing alerts.yaml; test/integration/dashboards.test.ts fails while the
// committed PrometheusRule differs from what this writes.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parse, stringify } from 'yaml';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    'runbook-base': { type: 'string' },
    'out-dir': { type: 'string', default: join(root, 'deploy', 'k8s', 'components', 'alerts') },
    'rules-out': { type: 'string' },
  },
});

const base = values['runbook-base'];
if (base !== undefined && !/^https?:\/\/[^\s#]+$/.test(base)) {
  process.stderr.write(`prometheusrule: --runbook-base must be an http(s) URL without a #fragment, got "${base}"\n`);
  process.exit(1);
}

const { groups } = parse(readFileSync(join(root, 'deploy', 'prometheus', 'alerts.yaml'), 'utf8'));
for (const rule of groups.flatMap((group) => group.rules)) {
  const url = rule.annotations?.runbook_url;
  if (base !== undefined && url) rule.annotations.runbook_url = `${base}${url.slice(url.indexOf('#'))}`;
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
mkdirSync(resolve(values['out-dir']), { recursive: true });
writeFileSync(join(resolve(values['out-dir']), 'prometheusrule.yaml'), header + stringify(rule, { lineWidth: 0 }));
if (values['rules-out']) {
  writeFileSync(resolve(values['rules-out']), '# Generated from deploy/prometheus/alerts.yaml by scripts/prometheusrule.mjs.\n' + stringify({ groups }, { lineWidth: 0 }));
}
