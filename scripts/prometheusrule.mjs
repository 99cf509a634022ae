// Writes deploy/prometheus/prometheusrule.yaml, the Kubernetes PrometheusRule
// (prometheus-operator) holding the same groups as deploy/prometheus/alerts.yaml.
// Run after editing alerts.yaml: `node scripts/prometheusrule.mjs`; a jest test
// (test/integration/dashboards.test.ts) fails while the two differ.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'deploy', 'prometheus');
const { groups } = parse(readFileSync(join(dir, 'alerts.yaml'), 'utf8'));
const rule = {
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'PrometheusRule',
  metadata: {
    name: 'wfs-subgraph',
    labels: { 'app.kubernetes.io/name': 'wfs-subgraph', 'app.kubernetes.io/component': 'alerts' },
  },
  spec: { groups },
};
const header = '# Generated from alerts.yaml by scripts/prometheusrule.mjs; edit alerts.yaml and rerun it.\n';
writeFileSync(join(dir, 'prometheusrule.yaml'), header + stringify(rule, { lineWidth: 0 }));
