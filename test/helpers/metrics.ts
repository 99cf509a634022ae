import { request } from 'undici';

/** One sample of a Prometheus text exposition. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** GETs `/metrics` of the server whose GraphQL URL is given, as text. */
export async function scrapeText(graphqlUrl: string): Promise<string> {
  const response = await request(new URL('/metrics', graphqlUrl));
  if (response.statusCode !== 200) throw new Error(`/metrics answered ${response.statusCode}`);
  return response.body.text();
}

/** Parses the samples of a text exposition (the subset prom-client writes). */
export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`unparsable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of the samples of `name` whose labels match `where` (a string, or a RegExp on the value). */
export function total(samples: Sample[], name: string, where: Record<string, string | RegExp> = {}): number {
  return samples
    .filter((sample) => sample.name === name)
    .filter((sample) =>
      Object.entries(where).every(([label, wanted]) => {
        const value = sample.labels[label] ?? '';
        return typeof wanted === 'string' ? value === wanted : wanted.test(value);
      }),
    )
    .reduce((sum, sample) => sum + sample.value, 0);
}

/** Scrapes and sums in one go. */
export async function scrapeTotal(graphqlUrl: string, name: string, where: Record<string, string | RegExp> = {}): Promise<number> {
  return total(parseSamples(await scrapeText(graphqlUrl)), name, where);
}
