import type { Counter } from 'prom-client';

/**
 * Waits until `condition` holds, checking after each turn of the event loop and then
 * every few milliseconds (`stepMs`): tests wait on counters and states, never on a fixed
 * sleep. Fails after `timeoutMs` (generous: a loaded 2-core machine). A condition that
 * costs a server work (a scrape of /metrics) over a wait of seconds takes a longer step.
 */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000, stepMs = 5): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
}

/** The sum of a prom-client counter over all its label values (or those matching `labels`). */
export async function counterTotal(counter: Counter<string>, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await counter.get();
  return values
    .filter((value) => Object.entries(labels).every(([name, wanted]) => String(value.labels[name]) === wanted))
    .reduce((sum, value) => sum + value.value, 0);
}
