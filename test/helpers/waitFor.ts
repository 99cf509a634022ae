import type { Counter } from 'prom-client';

/** The longest pause between two checks of a condition, however long the wait. */
const MAX_STEP_MS = 50;

/**
 * Waits until `condition` holds: tests wait on counters and states, never on a fixed
 * sleep. It checks at once, then after `stepMs`, and then at pauses that grow by half
 * each time up to MAX_STEP_MS (or `stepMs`, if longer): a condition that holds soon is
 * seen within milliseconds, and one that takes seconds (a server's scrape, a poll) is
 * checked 20 times a second rather than 200, which on the 2-core machine was CPU the
 * whole line shared. Fails after `timeoutMs` (generous: a loaded 2-core machine).
 */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000, stepMs = 5): Promise<void> {
  const until = Date.now() + timeoutMs;
  const longest = Math.max(stepMs, MAX_STEP_MS);
  for (let pause = stepMs; ; pause = Math.min(longest, pause * 1.5)) {
    if (await condition()) return;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** The sum of a prom-client counter over all its label values (or those matching `labels`). */
export async function counterTotal(counter: Counter<string>, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await counter.get();
  return values
    .filter((value) => Object.entries(labels).every(([name, wanted]) => String(value.labels[name]) === wanted))
    .reduce((sum, value) => sum + value.value, 0);
}
