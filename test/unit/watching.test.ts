import { Watching, MAX_BACKOFF_PERIODS, type WatchTarget } from '../../src/live/watch';
import type { PollerReason } from '../../src/upstream/observer';
import { locations, type AnyResource } from '../../src/upstream/resources';

/**
 * The choice between watching a company's list and letting what is kept of it expire
 * (src/live/watch.ts, docs/caching.md "Watched lists"), on a frozen clock: the poll
 * interval is 15 s and the window 5 s, so a period is 15 s and one walk of a one-page
 * list costs one call a period.
 */

const INTERVAL = 15_000;
const WINDOW = 5_000;

function setUp(options: { refuse?: boolean } = {}) {
  let now = 1_000_000;
  const watched = new Set<string>();
  const decisions: string[] = [];
  const target: WatchTarget = {
    watch: (tenantId, resource) => {
      if (options.refuse) return false;
      watched.add(`${tenantId}/${resource.name}`);
      return true;
    },
    unwatch: (tenantId, list) => void watched.delete(`${tenantId}/${list}`),
    reasonFor: (tenantId, list): PollerReason | undefined => (watched.has(`${tenantId}/${list}`) ? 'watched' : undefined),
  };
  const watching = new Watching(target, {
    intervalMs: INTERVAL,
    windowMs: WINDOW,
    now: () => now,
    resourceNamed: (list) => (list === 'locations' ? (locations as AnyResource) : undefined),
    events: { cacheWatching: (decision) => void decisions.push(decision) },
  });
  return {
    watching,
    watched,
    decisions,
    advance: (ms: number) => void (now += ms),
    isWatched: () => watched.has('t1/locations'),
  };
}

describe('the watching choice', () => {
  it('watches a list read often, keeps it while the polls save calls, and stops when reads stop', () => {
    const { watching, advance, isWatched, decisions } = setUp();
    watching.read('t1', 'locations', 'miss');
    expect(isWatched()).toBe(false);
    // Twice what a period of walks costs: watching now costs clearly less than expiring.
    watching.read('t1', 'locations', 'miss');
    expect(isWatched()).toBe(true);
    watching.ticked('t1', 'locations', 1);
    // Period after period, pages served only thanks to the polls pay for the walks.
    for (let period = 0; period < 6; period++) {
      advance(INTERVAL);
      watching.read('t1', 'locations', 'saved');
      watching.read('t1', 'locations', 'saved');
      watching.ticked('t1', 'locations', 1);
      expect(isWatched()).toBe(true);
    }
    // Reads stop: the polls' turns alone end the watching.
    advance(INTERVAL);
    watching.ticked('t1', 'locations', 1);
    advance(INTERVAL);
    watching.ticked('t1', 'locations', 1);
    expect(isWatched()).toBe(false);
    expect(decisions).toEqual(['started', 'stopped']);
  });

  it('never watches sparse reads (each page once per 30 s)', () => {
    const { watching, advance, decisions } = setUp();
    for (let round = 0; round < 20; round++) {
      watching.read('t1', 'locations', 'miss');
      advance(30_000);
    }
    expect(decisions).toEqual([]);
  });

  it('stops at once when the first walk shows the list costs more than the estimate, and holds it back longer after each such stop', () => {
    const { watching, advance, isWatched, decisions } = setUp();
    const startAndWalk = () => {
      for (let i = 0; i < 2; i++) watching.read('t1', 'locations', 'miss');
      if (isWatched()) watching.ticked('t1', 'locations', 10);
    };
    startAndWalk();
    expect(decisions).toEqual(['started', 'stopped']);
    // Held back for two periods now: the same misses do not start it again.
    advance(INTERVAL);
    startAndWalk();
    expect(decisions).toEqual(['started', 'stopped']);
    // The next start needs misses worth ten walks (its cost is known now).
    advance(INTERVAL);
    for (let i = 0; i < 19; i++) watching.read('t1', 'locations', 'miss');
    expect(isWatched()).toBe(false);
    watching.read('t1', 'locations', 'miss');
    expect(isWatched()).toBe(true);
    expect(MAX_BACKOFF_PERIODS).toBeGreaterThan(2);
  });

  it('counts a refusal by the replica bound and tries again a period later', () => {
    const { watching, advance, decisions } = setUp({ refuse: true });
    for (let i = 0; i < 5; i++) watching.read('t1', 'locations', 'miss');
    expect(decisions).toEqual(['refused']);
    advance(INTERVAL);
    for (let i = 0; i < 2; i++) watching.read('t1', 'locations', 'miss');
    expect(decisions).toEqual(['refused', 'refused']);
  });
});
