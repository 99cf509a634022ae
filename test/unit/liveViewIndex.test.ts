import { LOCAL_COORDINATOR } from '../../src/live/coordinator';
import { Outbox, Slices, type LiveEvent, type Subscriber, type View } from '../../src/live/delivery';
import { LiveHub, LiveLimitError } from '../../src/live/hub';
import type { ListReader } from '../../src/live/listReader';
import { PollBudget } from '../../src/live/pollBudget';
import { fingerprint, inScope, REMOVED_FINGERPRINT, SnapshotMemory, type RecordChange } from '../../src/live/snapshot';
import { ViewIndex, type WorkMeter } from '../../src/live/viewIndex';
import { NO_OBSERVER } from '../../src/upstream/observer';
import { locations, shifts, type ListFilter, type ShiftFilter, type ShiftRecord } from '../../src/upstream/resources';
import { seeded } from '../helpers/seeded';
import { waitFor } from '../helpers/waitFor';

/**
 * The live hub's matching (src/live/viewIndex.ts) and its sliced delivery
 * (src/live/delivery.ts): the index answers what trying every filter on every change
 * answers, at a cost of the changes and their matches, not views × changes; the
 * deliveries give the event loop turns between slices, in order, each once.
 *
 * The differential runs one fixed seed in the test line; `LIVE_INDEX_SEEDS=200 npx jest
 * liveViewIndex` runs seeds 1 to 200, `LIVE_INDEX_SEED=n` replays one (a failure names
 * its seed).
 */
const FIXED_SEED = 20261127;
const seeds = process.env.LIVE_INDEX_SEED
  ? [Number(process.env.LIVE_INDEX_SEED)]
  : process.env.LIVE_INDEX_SEEDS
    ? Array.from({ length: Number(process.env.LIVE_INDEX_SEEDS) }, (_, i) => i + 1)
    : [FIXED_SEED];

const DAY = 86_400_000;
const BASE = Date.parse('2026-11-23T00:00:00Z');
const LOCATIONS = ['loc_1', 'loc_2', 'loc_3'];

interface TestView extends View {
  readonly name: string;
}

const viewOf = (name: string, filter: ListFilter | undefined): TestView => ({ name, filter, subscribers: new Set() });

/** What every view sees of `change`, by trying every filter (inScope, the hub's former loop): the reference. */
function naive(views: readonly TestView[], change: RecordChange, previous: ShiftRecord | undefined): string[] {
  const seen: string[] = [];
  for (const view of views) {
    const filter = view.filter;
    const event = filter === undefined ? change : inScope(change, previous, (record) => shifts.matches!(record as ShiftRecord, filter as ShiftFilter));
    if (event) seen.push(`${view.name} ${event.kind} ${event.id}${event.record ? ' +record' : ''}`);
  }
  return seen.sort();
}

function indexed(index: ViewIndex<TestView>, change: RecordChange, previous: ShiftRecord | undefined): string[] {
  const seen: string[] = [];
  index.match(change, previous, (view, event) => seen.push(`${view.name} ${event.kind} ${event.id}${event.record ? ' +record' : ''}`));
  return seen.sort();
}

/** A random shift filter: any mix of location, startsFrom and startsBefore (empty windows included). */
function randomFilter(random: () => number): ListFilter | undefined {
  if (random() < 0.05) return undefined;
  const filter: Record<string, string | number> = {};
  if (random() < 0.5) filter.locationId = LOCATIONS[Math.floor(random() * LOCATIONS.length)]!;
  // Whole hours in a ten-day span, so windows often share edges with each other and with shift starts.
  const hour = () => BASE + Math.floor(random() * 240) * 3_600_000;
  if (random() < 0.6) filter.startsFrom = hour();
  if (random() < 0.6) filter.startsBefore = hour();
  return filter;
}

function randomShift(random: () => number, id: string): ShiftRecord {
  const pick = random();
  // A start at a whole hour (equal to some bounds), anywhere, missing, or unreadable.
  const start =
    pick < 0.08 ? null : pick < 0.12 ? 'not a date' : new Date(random() < 0.5 ? BASE + Math.floor(random() * 240) * 3_600_000 : BASE - DAY + Math.floor(random() * 12 * DAY)).toISOString();
  const locationId = random() < 0.1 ? null : LOCATIONS[Math.floor(random() * LOCATIONS.length)]!;
  return { id, start, end: null, locationId, userId: null };
}

/** A random change with its previous version, as the poller hands them: previous versions sometimes unknown. */
function randomChange(random: () => number, id: string): { change: RecordChange; previous: ShiftRecord | undefined } {
  const pick = random();
  const record = randomShift(random, id);
  const previous = random() < 0.9 ? randomShift(random, id) : undefined;
  if (pick < 0.3) return { change: { kind: 'ADDED', id, record, fingerprint: fingerprint(record) }, previous: random() < 0.8 ? undefined : previous };
  if (pick < 0.75) return { change: { kind: 'UPDATED', id, record, fingerprint: fingerprint(record) }, previous };
  return { change: { kind: 'REMOVED', id, fingerprint: REMOVED_FINGERPRINT }, previous };
}

describe('live view index', () => {
  it.each(seeds)('seed %i: finds for each change exactly the views, and the kind, that trying every filter finds', (seed) => {
    const random = seeded(seed);
    for (let round = 0; round < 20; round++) {
      const index = new ViewIndex<TestView>(shifts);
      let views: TestView[] = [];
      const count = 1 + Math.floor(random() * 200);
      for (let i = 0; i < count; i++) {
        const view = viewOf(`v${round}.${i}`, randomFilter(random));
        views.push(view);
        index.add(view);
      }
      for (let i = 0; i < 100; i++) {
        // Views come and go between changes, as subscribers do (the index is built again lazily).
        if (random() < 0.1 && views.length > 0) {
          const gone = views[Math.floor(random() * views.length)]!;
          index.delete(gone);
          views = views.filter((view) => view !== gone);
        }
        if (random() < 0.1) {
          const view = viewOf(`v${round}.${count + i}`, randomFilter(random));
          views.push(view);
          index.add(view);
        }
        const { change, previous } = randomChange(random, `s${i}`);
        const expected = naive(views, change, previous);
        const found = indexed(index, change, previous);
        if (JSON.stringify(found) !== JSON.stringify(expected)) {
          throw new Error(
            `seed ${seed} (LIVE_INDEX_SEED=${seed} to replay), round ${round}, change ${i}: ${JSON.stringify({ change, previous, filters: views.map((view) => [view.name, view.filter]) })}\n` +
              `index: ${JSON.stringify(found)}\nnaive: ${JSON.stringify(expected)}`,
          );
        }
      }
    }
  });

  it('does work in proportion to the changes and their matches, not to views × changes', () => {
    const CHANGES = 2_000;
    const changes = Array.from({ length: CHANGES }, (_, i) => {
      const start = new Date(BASE + (i % 100) * 3_600_000).toISOString();
      const record: ShiftRecord = { id: `s${i}`, start, end: null, locationId: LOCATIONS[i % 3]!, userId: null };
      const previous: ShiftRecord = { ...record, start: new Date(BASE + ((i + 7) % 100) * 3_600_000).toISOString() };
      return { change: { kind: 'UPDATED', id: record.id, record, fingerprint: fingerprint(record) } as RecordChange, previous };
    });
    /** Units of work to match every change against `views` windows that start after every shift (none matches). */
    const workWith = (views: number, matching = 0) => {
      const meter: WorkMeter = { units: 0 };
      const index = new ViewIndex<TestView>(shifts, meter);
      for (let i = 0; i < views; i++) index.add(viewOf(`v${i}`, { startsFrom: BASE + 365 * DAY + i * 60_000 }));
      // `matching` views whose window holds every shift.
      for (let i = 0; i < matching; i++) index.add(viewOf(`m${i}`, { startsFrom: BASE - DAY - i * 60_000 }));
      let matches = 0;
      for (const { change, previous } of changes) index.match(change, previous, () => (matches += 1));
      return { units: meter.units, matches, built: views + matching };
    };
    const few = workWith(100);
    const many = workWith(5_000);
    expect(few.matches).toBe(0);
    expect(many.matches).toBe(0);
    // Views × changes would be 50 times more work for 5,000 views than for 100; a lookup
    // is a few probes and about log(views) steps, so it is barely more (and the build of
    // the sorted index, once, is n log n).
    const lookups = (result: { units: number; built: number }) => result.units - result.built * Math.ceil(Math.log2(result.built + 1));
    expect(lookups(many)).toBeLessThan(2 * lookups(few));
    expect(many.units).toBeLessThan(CHANGES * 2 * (4 + 2 * Math.log2(5_000)) + 5_000 * 13);
    expect(many.units).toBeLessThan((CHANGES * 5_000) / 50);

    // With matches: each costs a few units more (reported, and the tree nodes on its way),
    // never the views that do not match.
    const matched = workWith(5_000, 20);
    expect(matched.matches).toBe(CHANGES * 20);
    expect(matched.units - many.units).toBeLessThan(matched.matches * 2 * (2 + Math.log2(5_020)));
  });
});

describe('live delivery in slices', () => {
  /** A subscriber that records what it got. */
  const recorder = (after = 0) => {
    const got: LiveEvent[] = [];
    const subscriber: Subscriber = { after, push: (event) => got.push(event) };
    return { got, subscriber };
  };
  const updated = (i: number): RecordChange => {
    const record: ShiftRecord = { id: `s${i}`, start: new Date(BASE + (i % 50) * 3_600_000).toISOString(), end: null, locationId: 'loc_1', userId: null };
    return { kind: 'UPDATED', id: record.id, record, fingerprint: fingerprint(record) };
  };

  it('gives the event loop turns between slices, and delivers every change once, in order, to each subscriber it concerns', async () => {
    const meter: WorkMeter = { units: 0 };
    const index = new ViewIndex<View>(shifts, meter);
    const views: View[] = [];
    const slices = new Slices(meter, { units: 2_000, deliveries: 50 });
    const outbox = new Outbox(index, () => views, slices);
    // 300 views with distinct windows and 2 subscribers each; the changes start at hours 0 to 49.
    const subscribers: Array<{ got: LiveEvent[]; window: number }> = [];
    for (let i = 0; i < 300; i++) {
      const window = BASE + (i % 60) * 3_600_000;
      const view: View = { filter: { startsFrom: window }, subscribers: new Set() };
      for (let j = 0; j < 2; j++) {
        const { got, subscriber } = recorder();
        view.subscribers.add(subscriber);
        subscribers.push({ got, window });
      }
      views.push(view);
      index.add(view);
    }
    const CHANGES = 500;
    const changes = Array.from({ length: CHANGES }, (_, i) => updated(i));
    // Each record's previous version starts at the same hour: UPDATED for a window that holds it, nothing otherwise.
    const before = new Map(changes.map((change) => [change.id, change.record!]));
    const delivered = () => subscribers.reduce((sum, { got }) => sum + got.length, 0);
    const expectedTotal = subscribers.reduce((sum, { window }) => sum + changes.filter((change) => Date.parse((change.record as ShiftRecord).start!) >= window).length, 0);

    // A probe scheduled with setImmediate, as another company's work would be: it runs
    // between two slices if the delivery gives the loop back.
    const seenByProbe: number[] = [];
    let probing = true;
    const probe = () => {
      seenByProbe.push(delivered());
      if (probing) setImmediate(probe);
    };
    setImmediate(probe);
    outbox.add(changes, before);
    await waitFor(() => !outbox.pending, 'every change delivered');
    probing = false;

    expect(delivered()).toBe(expectedTotal);
    expect(expectedTotal).toBeGreaterThan(10_000);
    // The probe had turns while the delivery was under way, many of them.
    const during = seenByProbe.filter((count) => count > 0 && count < expectedTotal);
    expect(during.length).toBeGreaterThan(expectedTotal / 50 / 2);
    for (const { got, window } of subscribers) {
      const ids = got.map((event) => ('id' in event ? event.id : 'error'));
      expect(ids).toEqual(changes.filter((change) => Date.parse((change.record as ShiftRecord).start!) >= window).map((change) => change.id));
    }
  });

  it('keeps batches in order across slices, gives a subscriber only the batches found after it joined, and ends after what came before', async () => {
    const meter: WorkMeter = { units: 0 };
    const index = new ViewIndex<View>(shifts, meter);
    const views: View[] = [];
    const turns: Array<() => void> = [];
    // Slices run when the test says: each is a turn of the loop it can observe.
    const slices = new Slices(meter, { units: 1_000_000, deliveries: 3 }, (slice) => turns.push(slice));
    const outbox = new Outbox(index, () => views, slices);
    const view: View = { filter: undefined, subscribers: new Set() };
    views.push(view);
    index.add(view);
    const early = recorder(outbox.last);
    view.subscribers.add(early.subscriber);
    outbox.add([updated(1), updated(2)], new Map());
    outbox.add([updated(3), updated(4)], new Map());
    turns.shift()!();
    expect(early.got.map((event) => 'id' in event && event.id)).toEqual(['s1', 's2', 's3']);
    // Joins after two batches were found: gets the third only.
    const late = recorder(outbox.last);
    view.subscribers.add(late.subscriber);
    outbox.add([updated(5)], new Map());
    outbox.end(new Error('gone'));
    while (turns.length > 0) turns.shift()!();
    expect(early.got.map((event) => ('id' in event ? event.id : event.error.message))).toEqual(['s1', 's2', 's3', 's4', 's5', 'gone']);
    expect(late.got.map((event) => ('id' in event ? event.id : event.error.message))).toEqual(['s5', 'gone']);
    expect(outbox.pending).toBe(false);
  });
});

describe('live hub, distinct filters per company', () => {
  it('refuses a subscription with a new filter past the bound, counted with its reason, and still takes filters in use and other companies', async () => {
    const refused: string[] = [];
    const read: ListReader = async () => ({ records: [], calls: 1, askedAt: 0 });
    const hub = new LiveHub(
      { read, intervalMs: 60_000, budget: new PollBudget(1_000), coordinator: LOCAL_COORDINATOR, events: { ...NO_OBSERVER, refused: (reason) => refused.push(reason) }, memory: new SnapshotMemory({ charge: () => undefined }), random: () => 0.5 },
      { filtersPerCompany: 2 },
    );
    const held = [hub.subscribe('t1', shifts, { locationId: 'loc_1' }), hub.subscribe('t1', shifts, { startsFrom: BASE }), hub.subscribe('t1', shifts), hub.subscribe('t1', locations)];
    expect(hub.filters('t1')).toBe(2);
    let error: unknown;
    try {
      hub.subscribe('t1', shifts, { locationId: 'loc_2' });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(LiveLimitError);
    expect(error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', reason: 'filters' });
    expect(refused).toEqual(['filters']);
    // A filter in use is joined, whatever the bound; another company has its own.
    held.push(hub.subscribe('t1', shifts, { startsFrom: BASE }), hub.subscribe('t2', shifts, { locationId: 'loc_2' }));
    expect(hub.filters('t1')).toBe(2);
    // The last subscriber of a filter leaves: a new filter fits again.
    await held[0]!.return!();
    expect(hub.filters('t1')).toBe(1);
    held.push(hub.subscribe('t1', shifts, { locationId: 'loc_2' }));
    expect(refused).toEqual(['filters']);
    for (const subscription of held) await subscription.return!();
    expect(hub.filters('t1')).toBe(0);
    expect(hub.pollers).toBe(0);
    await hub.close();
  });
});
