import { parser } from '@prometheus-io/lezer-promql';

/** One series selector of a PromQL expression: `name{label op "value", ...}`. */
export interface SeriesSelector {
  /** The metric name, from the identifier or a `__name__` matcher. */
  name: string | undefined;
  matchers: Array<{ label: string; op: string; value: string }>;
  /** The selector as written, to name it in a failure. */
  text: string;
}

/**
 * Grafana's interval variables stand where PromQL wants a duration; they parse once
 * replaced by one. Label values such as "$job" are plain strings to PromQL.
 */
function withGrafanaIntervals(expr: string): string {
  return expr.replace(/\$(__rate_interval|__interval|__range)\b|\$\{(__rate_interval|__interval|__range)\}/g, '5m');
}

/**
 * Every series selector of an expression, read with Prometheus's own PromQL grammar
 * (`@prometheus-io/lezer-promql`, the one its web UI uses), so selectors inside
 * functions, aggregations, subqueries and both sides of binary operators are all found.
 * Throws on an expression the grammar does not accept.
 */
export function seriesSelectors(expr: string): SeriesSelector[] {
  const source = withGrafanaIntervals(expr);
  const tree = parser.parse(source);
  const selectors: SeriesSelector[] = [];
  const errors: number[] = [];
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors.push(node.from);
      if (node.name !== 'VectorSelector') return;
      const selector: SeriesSelector = { name: undefined, matchers: [], text: source.slice(node.from, node.to) };
      const identifier = node.node.getChild('Identifier');
      if (identifier) selector.name = source.slice(identifier.from, identifier.to);
      for (const matcher of node.node.getChild('LabelMatchers')?.getChildren('UnquotedLabelMatcher') ?? []) {
        const part = (name: string) => {
          const child = matcher.getChild(name);
          return child ? source.slice(child.from, child.to) : '';
        };
        const value = JSON.parse(part('StringLiteral').replace(/^'(.*)'$/, '"$1"')) as string;
        selector.matchers.push({ label: part('LabelName'), op: part('MatchOp'), value });
      }
      selector.name ??= selector.matchers.find((matcher) => matcher.label === '__name__' && matcher.op === '=')?.value;
      selectors.push(selector);
    },
  });
  if (errors.length > 0) throw new Error(`not PromQL (at ${errors[0]}): ${expr}`);
  return selectors;
}
