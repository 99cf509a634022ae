import { LOCAL_COORDINATOR } from '../../src/live/coordinator';
import { LiveHub, LiveLimitError, SlowConsumerError, type LiveEvent, type LiveLimits } from '../../src/live/hub';
import type { ListReader } from '../../src/live/listReader';
import { PollBudget } from '../../src/live/pollBudget';
import { diff, diffInSlices, apply, fingerprint, SnapshotMemory } from '../../src/live/snapshot';
import { NO_OBSERVER, type PollerReason } from '../../src/upstream/observer';
import { makeTenant, startShiftChurn } from '../../tools/emulator';
import { UpstreamError } from '../../src/upstream/errors';
import { locations, shifts, type AnyResource, type ShiftRecord } from '../../src/upstream/resources';
import { Watching, MAX_BACKOFF_PERIODS, RECENT_PAGES_PER_LIST, RECENT_PAGES_PER_REPLICA, RECENT_PERIODS, type WatchTarget } from '../../src/live/watch';
import { waitFor } from '../helpers/waitFor';

const shift = (id: string, end = '2026-11-23T17:00:00+01:00', locationId = 'loc_1'): ShiftRecord => ({ id, start: '2026-11-23T09:00:00+01:00', end, locationId, userId: null });

/** A reader over a list the test edits, counting its walks. */
function fakeList(records: ShiftRecord[]) {
  const state = { records, reads: 0, failWith: undefined as Error | undefined };
  const read: ListReader = async () => {
    state.reads += 1;
    if (state.failWith) throw state.failWith;
    return { records: [...state.records], calls: 1, askedAt: 0 };
  };
  return { state, read };
}

async function next(iterator: AsyncIterableIterator<LiveEvent>): Promise<LiveEvent> {
  const result = await iterator.next();
  if (result.done) throw new Error('ended');
  return result.value;
}

describe('live snapshot', () => {
  it('finds added, updated and removed records by id and content', () => {
    const { next: before } = diff(new Map(), [shift('a'), shift('b')]);
    const { changes, next: after } = diff(before, [shift('a', '2026-11-23T18:00:00+01:00'), shift('c')]);
    expect(changes.map((change) => `${change.kind} ${change.id}`)).toEqual(['UPDATED a', 'ADDED c', 'REMOVED b']);
    expect([...after.keys()]).toEqual(['a', 'c']);
    // A change already seen here is not delivered again.
    expect(apply(after, changes[0]!)).toBe(false);
    expect(apply(after, { kind: 'UPDATED', id: 'a', fingerprint: fingerprint(shift('a')) })).toBe(true);
  });

  it('finds the same changes in slices, giving the event loop turns between them', async () => {
    const previous = diff(new Map(), Array.from({ length: 50 }, (_, i) => shift(`r${i}`))).next;
    const records = Array.from({ length: 60 }, (_, i) => shift(`r${i}`, i % 3 === 0 ? '2026-11-23T18:00:00+01:00' : undefined)).slice(5);
    let turns = 0;
    let probing = true;
    const probe = () => {
      turns += 1;
      if (probing) setImmediate(probe);
    };
    setImmediate(probe);
    const sliced = await diffInSlices(previous, records, 7);
    probing = false;
    expect(sliced).toEqual(diff(previous, records));
    // 55 records, 7 a slice: the loop had a turn between slices.
    expect(turns).toBeGreaterThanOrEqual(7);
  });
});

describe('poll budget', () => {
  it('stretches every interval by the same factor once the pollers want more calls than the budget', () => {
    const budget = new PollBudget(10);
    const pollers = Array.from({ length: 5 }, (_, i) => ({ company: `c${i}` }));
    for (const poller of pollers) budget.note(poller.company, poller, 2, 1_000);
    expect(pollers.map((poller) => budget.stretch(poller.company))).toEqual([1, 1, 1, 1, 1]);
    for (const poller of pollers) budget.note(poller.company, poller, 4, 1_000);
    expect(pollers.map((poller) => budget.stretch(poller.company))).toEqual([2, 2, 2, 2, 2]);
    expect(budget.largestStretch()).toBe(2);
    for (const poller of pollers) budget.forget(poller.company, poller);
    expect(budget.stretch('c0')).toBe(1);
    expect(budget.largestStretch()).toBe(1);
  });

  it("is fair per company: one company's demand stretches its own intervals only", () => {
    const budget = new PollBudget(50);
    // A company wanting 2 calls a second, and one wanting 1 000 (a long list, or many lists).
    budget.note('small', {}, 30, 15_000);
    const greedy = Array.from({ length: 10 }, () => ({}));
    for (const poller of greedy) budget.note('greedy', poller, 1_500, 15_000);
    expect(budget.stretch('small')).toBe(1);
    // The greedy company gets what the small one leaves: 48 of its 1 000 calls a second.
    expect(budget.stretch('greedy')).toBeCloseTo(1_000 / 48, 6);
    // Below its equal share, a company is never stretched, however many companies want more.
    for (let i = 0; i < 8; i++) budget.note(`big${i}`, {}, 1_500, 15_000);
    expect(budget.stretch('small')).toBe(1);
    expect(budget.stretch('big0')).toBeCloseTo(100 / (48 / 9), 6);
  });
});

describe('live hub', () => {
  const hubOf = (read: ListReader, limits: Partial<LiveLimits> = {}, intervalMs = 20, callsPerSecond = 1_000) =>
    new LiveHub({ read, intervalMs, budget: new PollBudget(callsPerSecond), coordinator: LOCAL_COORDINATOR, events: NO_OBSERVER, memory: new SnapshotMemory({ charge: () => undefined }), random: () => 0.5 }, limits);

  it('shares one poller between the subscribers of a key and stops it with the last one', async () => {
    const list = fakeList([shift('a')]);
    const hub = hubOf(list.read);
    const one = hub.subscribe('t1', shifts);
    const two = hub.subscribe('t1', shifts);
    const other = hub.subscribe('t2', shifts);
    expect(hub.pollers).toBe(2);
    await waitFor(() => list.state.reads >= 4, 'a few polls');
    list.state.records = [shift('a'), shift('b')];
    expect(await next(one)).toMatchObject({ kind: 'ADDED', id: 'b' });
    expect(await next(two)).toMatchObject({ kind: 'ADDED', id: 'b' });
    expect(await next(other)).toMatchObject({ kind: 'ADDED', id: 'b' });
    await one.return!();
    await two.return!();
    await other.return!();
    expect(hub.pollers).toBe(0);
    const reads = list.state.reads;
    // Time is the subject: over many poll intervals after the last subscriber left, no read.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(list.state.reads).toBe(reads);
    await hub.close();
  });

  it('polls a list watched for queries and subscribed with one poller, counted under its reason, and stops it when it has neither', async () => {
    const list = fakeList([shift('a')]);
    const pollers = new Map<string, number>();
    const quiet: number[] = [];
    const events = { ...NO_OBSERVER, livePollers: (reason: string, delta: number) => void pollers.set(reason, (pollers.get(reason) ?? 0) + delta) };
    const hub = new LiveHub(
      { read: list.read, intervalMs: 20, budget: new PollBudget(1_000), coordinator: LOCAL_COORDINATOR, events, memory: new SnapshotMemory({ charge: () => undefined }), random: () => 0.5, onQuiet: (_t, _l, read) => void quiet.push(read.calls) },
      { watchedLists: 1 },
    );
    const gauge = () => Object.fromEntries([...pollers].filter(([, n]) => n !== 0));
    expect(hub.watch('t1', shifts)).toBe(true);
    expect([hub.pollers, hub.reasonFor('t1', 'shifts'), gauge()]).toEqual([1, 'watched', { watched: 1 }]);
    // The replica's bound on watched lists: another company's list is refused.
    expect(hub.watch('t2', shifts)).toBe(false);
    const subscription = hub.subscribe('t1', shifts);
    expect([hub.pollers, hub.reasonFor('t1', 'shifts'), gauge()]).toEqual([1, 'both', { both: 1 }]);
    // A walk that saw no change is told (what is kept of the list may be confirmed by it).
    await waitFor(() => quiet.length >= 2, 'walks that saw no change');
    await subscription.return!();
    expect([hub.pollers, hub.reasonFor('t1', 'shifts'), gauge()]).toEqual([1, 'watched', { watched: 1 }]);
    const reads = list.state.reads;
    await waitFor(() => list.state.reads > reads, 'still polled for the watching');
    hub.unwatch('t1', 'shifts');
    expect([hub.pollers, hub.watched, gauge()]).toEqual([0, 0, {}]);
    await hub.close();
  });

  it('keeps to the filter: a record that stops matching is REMOVED', async () => {
    const list = fakeList([shift('a'), shift('b', undefined, 'loc_2')]);
    const hub = hubOf(list.read);
    const atOne = hub.subscribe('t1', shifts, { locationId: 'loc_1' });
    await waitFor(() => list.state.reads >= 2, 'the baseline and a poll');
    list.state.records = [shift('a', undefined, 'loc_2'), shift('b', undefined, 'loc_2')];
    expect(await next(atOne)).toMatchObject({ kind: 'REMOVED', id: 'a' });
    await hub.close();
  });

  it('ends every subscription of a key with the upstream error when the grant is gone, and goes on through a passing fault', async () => {
    const list = fakeList([shift('a')]);
    const hub = hubOf(list.read);
    const one = hub.subscribe('t1', shifts);
    await waitFor(() => list.state.reads >= 2, 'polls');
    list.state.failWith = new UpstreamError('UPSTREAM_UNAVAILABLE', 'down');
    const reads = list.state.reads;
    await waitFor(() => list.state.reads >= reads + 2, 'polls through the fault');
    list.state.failWith = new UpstreamError('FORBIDDEN', 'no shifts.read');
    const event = await next(one);
    expect('error' in event && (event.error as UpstreamError).code).toBe('FORBIDDEN');
    expect(await one.next()).toEqual({ value: undefined, done: true });
    expect(hub.pollers).toBe(0);
    expect(hub.subscriptions).toBe(0);
    await hub.close();
  });

  it('drops a subscriber that does not read past its queue bound, and refuses past the company and replica bounds', async () => {
    const list = fakeList([]);
    const hub = hubOf(list.read, { queuedChanges: 3, perCompany: 2, perReplica: 3 });
    const slow = hub.subscribe('t1', shifts);
    await waitFor(() => list.state.reads >= 2, 'polls');
    // One new record a poll, never read: the fourth overflows its queue of three.
    for (let i = 0; hub.subscriptions > 0; i++) {
      const reads = list.state.reads;
      list.state.records = [...list.state.records, shift(`n${i}`)];
      await waitFor(() => list.state.reads > reads + 1 || hub.subscriptions === 0, 'a poll');
    }
    expect(list.state.records).toHaveLength(4);
    // Dropped: its poller stopped with it.
    expect(hub.pollers).toBe(0);
    const event = await next(slow);
    expect('error' in event && event.error).toBeInstanceOf(SlowConsumerError);

    const held = [hub.subscribe('t1', shifts), hub.subscribe('t1', shifts)];
    expect(() => hub.subscribe('t1', shifts)).toThrow(LiveLimitError);
    held.push(hub.subscribe('t2', shifts));
    expect(() => hub.subscribe('t3', shifts)).toThrow(expect.objectContaining({ reason: 'replica_subscriptions' }));
    await hub.close();
  });

  it('ends a subscription whose signal aborts: its reason next (queued changes let go, a waiting read woken), then done, its slot free', async () => {
    const list = fakeList([]);
    const hub = hubOf(list.read, { perCompany: 1 });
    const lapsed = new Error('the identity lapsed');

    // Changes queued, unread, when it ends: the reason comes first and they are let go.
    const queued = new AbortController();
    const reading = hub.subscribe('t1', shifts, undefined, queued.signal);
    await waitFor(() => list.state.reads >= 2, 'polls');
    list.state.records = [shift('a')];
    await waitFor(() => list.state.reads >= 4, 'the change found and queued');
    queued.abort(lapsed);
    expect(hub.subscriptions).toBe(0);
    expect(await next(reading)).toEqual({ error: lapsed });
    expect(await reading.next()).toEqual({ value: undefined, done: true });

    // A read waiting for a change is woken with the reason; the company's one slot is free again.
    const waiting = new AbortController();
    const other = hub.subscribe('t1', shifts, undefined, waiting.signal);
    const woken = next(other);
    waiting.abort(lapsed);
    expect(await woken).toEqual({ error: lapsed });
    expect(hub.pollers).toBe(0);

    // A signal aborted already: the subscription is ended as it starts.
    const already = hub.subscribe('t1', shifts, undefined, AbortSignal.abort(lapsed));
    expect(await next(already)).toEqual({ error: lapsed });
    expect(hub.subscriptions).toBe(0);
    await hub.close();
  });
});

describe('live hub, one poller per company and list', () => {
  const START = Date.parse('2026-11-23T09:00:00+01:00');
  const at = (ms: number) => new Date(ms).toISOString();
  const shiftAt = (id: string, start: number): ShiftRecord => ({ id, start: at(start), end: at(start + 3_600_000), locationId: 'loc_1', userId: null });
  const MINUTE = 60_000;

  it('makes one poller for 1,000 subscriptions with distinct startsFrom, walks once per interval, and applies each filter to the changes of that walk', async () => {
    const walks: number[] = [];
    const state = { records: [shiftAt('a', START)] };
    const read: ListReader = async () => {
      walks.push(performance.now());
      return { records: [...state.records], calls: 1, askedAt: 0 };
    };
    const budget = new PollBudget(1_000);
    const hub = new LiveHub({ read, intervalMs: 20, budget, coordinator: LOCAL_COORDINATOR, events: NO_OBSERVER, memory: new SnapshotMemory({ charge: () => undefined }), random: () => 0.5 });
    // Subscriber i sees shifts from START + (i - 500) minutes: 0..500 see shift a, 501..999 do not.
    const subscriptions = Array.from({ length: 1_000 }, (_, i) => hub.subscribe('big', shifts, { startsFrom: START + (i - 500) * MINUTE }));
    expect(hub.pollers).toBe(1);
    expect(hub.subscriptions).toBe(1_000);
    await waitFor(() => walks.length >= 3, 'the baseline and two polls');

    // a starts 100 minutes later: still seen by 0..500 (UPDATED), newly by 501..600 (ADDED).
    state.records = [shiftAt('a', START + 100 * MINUTE)];
    expect(await next(subscriptions[0]!)).toMatchObject({ kind: 'UPDATED', id: 'a' });
    expect(await next(subscriptions[500]!)).toMatchObject({ kind: 'UPDATED', id: 'a' });
    expect(await next(subscriptions[550]!)).toMatchObject({ kind: 'ADDED', id: 'a' });
    expect(await next(subscriptions[600]!)).toMatchObject({ kind: 'ADDED', id: 'a' });
    // a goes, and z (in every window) comes: 0..600 see z ADDED then a REMOVED (removals last), 601..999 only z ADDED.
    state.records = [shiftAt('z', START + 1_000 * MINUTE)];
    expect(await next(subscriptions[0]!)).toMatchObject({ kind: 'ADDED', id: 'z' });
    expect(await next(subscriptions[0]!)).toMatchObject({ kind: 'REMOVED', id: 'a' });
    expect(await next(subscriptions[600]!)).toMatchObject({ kind: 'ADDED', id: 'z' });
    expect(await next(subscriptions[600]!)).toMatchObject({ kind: 'REMOVED', id: 'a' });
    expect(await next(subscriptions[601]!)).toMatchObject({ kind: 'ADDED', id: 'z' });
    expect(await next(subscriptions[999]!)).toMatchObject({ kind: 'ADDED', id: 'z' });

    // One walk per interval: never two walks of the company's list closer than the interval (20 ms,
    // the jitter at 0.5); 1,000 pollers would have walked 1,000 times at each tick.
    const gaps = walks.slice(1).map((time, i) => time - walks[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(15);
    expect(hub.pollers).toBe(1);
    for (const subscription of subscriptions) await subscription.return!();
    expect(hub.pollers).toBe(0);
    await hub.close();
  });

  it("charges each poller's snapshot (and a filterable list's kept records) to the memory budget directly, and gives it back when the poller stops", async () => {
    let held = 0;
    const memory = new SnapshotMemory({ charge: (units) => (held += units) });
    const read: ListReader = async (_tenantId, resource) => ({ records: resource === shifts ? [shiftAt('a', START), shiftAt('b', START), shiftAt('c', START)] : [{ id: 'l1', name: 'One' }], calls: 1, askedAt: 0 });
    const hub = new LiveHub({ read, intervalMs: 20, budget: new PollBudget(1_000), coordinator: LOCAL_COORDINATOR, events: NO_OBSERVER, memory, random: () => 0.5 });
    const held1 = hub.subscribe('t1', shifts, { startsFrom: START });
    const held2 = hub.subscribe('t1', locations);
    // Shifts: 3 entries and 3 kept records; locations (no filter): 1 entry. Four entries are 2 units, plus 3 records.
    await waitFor(() => held === 5, 'both baselines charged');
    await held1.return!();
    await held2.return!();
    expect(held).toBe(0);
    await hub.close();
  });

  it("keeps another company's interval: a company that wants more than its share stretches only its own polls", async () => {
    const walks = new Map<string, number>();
    // The big company's lists are long (10 pages a walk), the small one's one page.
    const read: ListReader = async (tenantId) => {
      walks.set(tenantId, (walks.get(tenantId) ?? 0) + 1);
      return { records: [], calls: tenantId === 'big' ? 10 : 1, askedAt: 0 };
    };
    // 100 calls a second: the small company wants 50 (one page every 20 ms), the big one 1 000.
    const budget = new PollBudget(100);
    const hub = new LiveHub({ read, intervalMs: 20, budget, coordinator: LOCAL_COORDINATOR, events: NO_OBSERVER, memory: new SnapshotMemory({ charge: () => undefined }), random: () => 0.5 });
    const held = [
      ...Array.from({ length: 500 }, (_, i) => hub.subscribe('big', shifts, { startsFrom: START + i * MINUTE })),
      hub.subscribe('big', locations),
      hub.subscribe('small', shifts),
    ];
    expect(hub.pollers).toBe(3);
    await waitFor(() => (walks.get('big') ?? 0) >= 2 && (walks.get('small') ?? 0) >= 2, 'both companies polled');
    expect(budget.stretch('small')).toBe(1);
    expect(budget.stretch('big')).toBeGreaterThan(10);
    const big = walks.get('big')!;
    const small = walks.get('small')!;
    await waitFor(() => walks.get('small')! >= small + 20, 'twenty more polls of the small company');
    // In the time the small company polled 20 times at its interval, the big one's two stretched lists polled a few times at most.
    expect(walks.get('big')! - big).toBeLessThanOrEqual(8);
    for (const subscription of held) await subscription.return!();
    await hub.close();
  });
});

describe('demo churn', () => {
  it("edits the demo company's shifts now and then: ends moved, an open shift posted and gone", async () => {
    const tenant = makeTenant({ tenantId: 'churn', locationCount: 2, shiftCount: 20 });
    const before = JSON.stringify(tenant.shifts);
    const churn = startShiftChurn(tenant, 5);
    try {
      await waitFor(() => tenant.shifts.length === 21, 'an open shift posted');
      expect(tenant.shifts[20]!.user).toBeNull();
      await waitFor(() => tenant.shifts.length === 20 && JSON.stringify(tenant.shifts) !== before, 'the open shift gone, ends moved');
    } finally {
      churn.stop();
    }
  });
});

/**
 * The choice between watching a company's list and letting what is kept of it expire
 * (src/live/watch.ts, docs/caching.md "Watched lists"), on a frozen clock: the poll
 * interval is 15 s and the window 5 s, so a period is 15 s, one walk of a one-page
 * list costs one call a period, and a poll could save a third of a period's re-reads
 * (those within a window of it): 6 re-reads within a period start the watching.
 */

const INTERVAL = 15_000;
const WINDOW = 5_000;

function watchingSetUp(options: { refuse?: boolean; recordsHeld?: number } = {}) {
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
    recordsHeld: () => options.recordsHeld ?? 0,
    events: { cacheWatching: (decision) => void decisions.push(decision) },
  });
  /** Misses of t1's locations pages `pages` (kept keys), in a burst. */
  const miss = (pages: string[]) => pages.forEach((page) => watching.read('t1', 'locations', 'miss', page));
  return {
    watching,
    watched,
    decisions,
    miss,
    advance: (ms: number) => void (now += ms),
    isWatched: () => watched.has('t1/locations'),
  };
}

/** `n` page keys, `from` on. */
const pages = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `page ${from + i}`);

describe('the watching choice', () => {
  it('watches a list whose pages are read again after the window, keeps it while the polls save calls, and stops when reads stop', () => {
    const { watching, advance, isWatched, decisions, miss } = watchingSetUp();
    // First reads cost their calls watched or not: they weigh nothing.
    miss(pages(6));
    expect(isWatched()).toBe(false);
    // Read again after their kept copies expired: what polls could save of that is twice
    // what a period of walks costs, so watching now costs clearly less than expiring.
    advance(WINDOW);
    miss(pages(5));
    expect(isWatched()).toBe(false);
    miss(pages(1, 5));
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

  it('never watches many pages each read once in a burst, burst after burst (the bench\'s sparse load), nor a page read again once per 30 s', () => {
    const { watching, advance, decisions, miss } = watchingSetUp();
    // A person paging through a long list, a new stretch of 140 pages every window.
    for (let burst = 0; burst < 12; burst++) {
      miss(pages(140, burst * 140));
      advance(WINDOW);
    }
    // One page read every 30 s: a re-read each time, one in two periods.
    for (let round = 0; round < 20; round++) {
      miss(['page 0']);
      advance(30_000);
    }
    expect(decisions).toEqual([]);
    // Nor a one-page list read again every window: a poll could save only the re-read in
    // the window after it, one a period, under the two walks' worth that start watching.
    for (let round = 0; round < 12; round++) {
      miss(['page 0']);
      advance(WINDOW);
    }
    expect(decisions).toEqual([]);
    expect(watching.tracked).toBe(1);
  });

  it('takes a walk to cost at least the pages of 100 records the replica holds of the list: 2 pages of 100 read again every window are not watched', () => {
    // The bench's repeated-200: a company's 2 pages are its whole list, so a walk (2 calls)
    // costs what re-reading them does, and a poll could save one window's re-reads in three.
    const readEveryWindow = (setUp: ReturnType<typeof watchingSetUp>) => {
      for (let round = 0; round < 12; round++) {
        setUp.miss(pages(2));
        setUp.advance(WINDOW);
      }
      return setUp.decisions;
    };
    expect(readEveryWindow(watchingSetUp({ recordsHeld: 200 }))).toEqual([]);
    // Taken for a one-call walk (nothing held), the same reads would start a watcher.
    expect(readEveryWindow(watchingSetUp())[0]).toBe('started');
  });

  it('remembers pages read for RECENT_PERIODS periods and RECENT_PAGES_PER_LIST per list, RECENT_PAGES_PER_REPLICA in all', () => {
    const { watching, advance, isWatched, miss } = watchingSetUp();
    // Read again only past the horizon: first reads again.
    miss(pages(6));
    advance(RECENT_PERIODS * INTERVAL);
    miss(pages(6));
    expect(isWatched()).toBe(false);
    // A list's least recently read pages go first: the first 6 of a long burst are forgotten.
    advance(WINDOW);
    miss(pages(RECENT_PAGES_PER_LIST, 6));
    expect(watching.rememberedPages).toBe(RECENT_PAGES_PER_LIST);
    miss(pages(6));
    expect(isWatched()).toBe(false);
    miss(pages(6, RECENT_PAGES_PER_LIST));
    expect(isWatched()).toBe(true);
    // The replica's bound: other companies' pages fill it, and past it nothing new is remembered.
    for (let company = 0; watching.rememberedPages < RECENT_PAGES_PER_REPLICA; company++) {
      pages(RECENT_PAGES_PER_LIST).forEach((page) => watching.read(`c${company}`, 'locations', 'miss', page));
    }
    watching.read('other', 'locations', 'miss', 'page 0');
    expect(watching.rememberedPages).toBe(RECENT_PAGES_PER_REPLICA);
    // Until they age out: the sweep forgets them, and the lists idle since.
    advance(RECENT_PERIODS * INTERVAL);
    watching.read('other', 'locations', 'miss', 'page 0');
    expect([watching.rememberedPages, watching.tracked]).toEqual([1, 2]);
  });

  it('stops at once when the first walk shows the list costs more than the estimate, and holds it back longer after each such stop', () => {
    const { watching, advance, isWatched, decisions, miss } = watchingSetUp();
    miss(pages(60));
    advance(WINDOW);
    const startAndWalk = () => {
      miss(pages(6));
      if (isWatched()) watching.ticked('t1', 'locations', 10);
    };
    startAndWalk();
    expect(decisions).toEqual(['started', 'stopped']);
    // Held back for two periods now: the same re-reads do not start it again.
    advance(INTERVAL);
    startAndWalk();
    expect(decisions).toEqual(['started', 'stopped']);
    // The next start needs re-reads worth ten walks (its cost is known now).
    advance(INTERVAL);
    miss(pages(59));
    expect(isWatched()).toBe(false);
    miss(pages(1, 59));
    expect(isWatched()).toBe(true);
    expect(MAX_BACKOFF_PERIODS).toBeGreaterThan(2);
  });

  it('counts a refusal by the replica bound and tries again a period later', () => {
    const { advance, decisions, miss } = watchingSetUp({ refuse: true });
    miss(pages(6));
    expect(decisions).toEqual([]);
    advance(WINDOW);
    miss(pages(6));
    expect(decisions).toEqual(['refused']);
    advance(INTERVAL);
    miss(pages(6));
    expect(decisions).toEqual(['refused', 'refused']);
  });
});
