import { LiveHub, LiveLimitError, SlowConsumerError, type LiveEvent } from '../../src/live/hub';
import type { ListReader } from '../../src/live/listReader';
import { PollBudget } from '../../src/live/pollBudget';
import { diff, apply, fingerprint } from '../../src/live/snapshot';
import { makeTenant, startShiftChurn } from '../../src/emulator';
import { UpstreamError } from '../../src/upstream/errors';
import { shifts, type ShiftRecord } from '../../src/upstream/resources';
import { waitFor } from '../helpers/waitFor';

const shift = (id: string, end = '2026-11-23T17:00:00+01:00', locationId = 'loc_1'): ShiftRecord => ({ id, start: '2026-11-23T09:00:00+01:00', end, locationId, userId: null });

/** A reader over a list the test edits, counting its walks. */
function fakeList(records: ShiftRecord[]) {
  const state = { records, reads: 0, failWith: undefined as Error | undefined };
  const read: ListReader = async () => {
    state.reads += 1;
    if (state.failWith) throw state.failWith;
    return { records: [...state.records], calls: 1 };
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
});

describe('poll budget', () => {
  it('stretches every interval by the same factor once the pollers want more calls than the budget', () => {
    const budget = new PollBudget(10);
    const pollers = Array.from({ length: 5 }, () => ({}));
    for (const poller of pollers) budget.note(poller, 2, 1_000);
    expect(budget.stretch()).toBe(1);
    for (const poller of pollers) budget.note(poller, 4, 1_000);
    expect(budget.stretch()).toBe(2);
    for (const poller of pollers) budget.forget(poller);
    expect(budget.stretch()).toBe(1);
  });
});

describe('live hub', () => {
  const hubOf = (read: ListReader, limits = {}) => new LiveHub({ read, intervalMs: 20, callsPerSecond: 1_000, limits, random: () => 0.5 });

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
    expect(() => hub.subscribe('t3', shifts)).toThrow(expect.objectContaining({ reason: 'replica' }));
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
