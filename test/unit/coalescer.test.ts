import { InFlight, coalescingKey } from '../../src/upstream/resilience/coalescer';
import { OTHER_TENANT_ID, TENANT_ID } from '../helpers/fixtures';

/** A call the test settles by hand, and the signal it was started with. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('InFlight', () => {
  it('shares one call between concurrent callers of the same key, and none between keys', async () => {
    const inFlight = new InFlight<string>();
    const started: string[] = [];
    const gates = new Map<string, ReturnType<typeof deferred<string>>>();
    const start = (key: string) => (_signal: AbortSignal) => {
      started.push(key);
      const gate = deferred<string>();
      gates.set(key, gate);
      return gate.promise;
    };
    const a = [1, 2, 3].map(() => inFlight.run('a', undefined, start('a')));
    const b = inFlight.run('b', undefined, start('b'));
    expect(started).toEqual(['a', 'b']);
    gates.get('a')!.resolve('A');
    gates.get('b')!.resolve('B');
    await expect(Promise.all(a)).resolves.toEqual(['A', 'A', 'A']);
    await expect(b).resolves.toBe('B');
  });

  it('keeps nothing after the call settles: no cached value, no cached error', async () => {
    const inFlight = new InFlight<number>();
    let calls = 0;
    await expect(inFlight.run('k', undefined, async () => { calls += 1; throw new Error('boom'); })).rejects.toThrow('boom');
    expect(inFlight.size).toBe(0);
    await expect(inFlight.run('k', undefined, async () => { calls += 1; return 7; })).resolves.toBe(7);
    await expect(inFlight.run('k', undefined, async () => { calls += 1; return 8; })).resolves.toBe(8);
    expect(calls).toBe(3);
    expect(inFlight.size).toBe(0);
  });

  it("lets one waiter go on its abort without cancelling the call for the others", async () => {
    const inFlight = new InFlight<string>();
    const gate = deferred<string>();
    let shared: AbortSignal | undefined;
    const leaving = new AbortController();
    const first = inFlight.run('k', leaving.signal, (signal) => {
      shared = signal;
      return gate.promise;
    });
    const second = inFlight.run('k', new AbortController().signal, () => Promise.reject(new Error('not started twice')));
    leaving.abort();
    await expect(first).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    expect(shared!.aborted).toBe(false);
    gate.resolve('page');
    await expect(second).resolves.toBe('page');
  });

  it('cancels the call once every waiter has gone, and starts afresh for a newcomer', async () => {
    const inFlight = new InFlight<string>();
    const gate = deferred<string>();
    let shared: AbortSignal | undefined;
    const one = new AbortController();
    const two = new AbortController();
    const first = inFlight.run('k', one.signal, (signal) => {
      shared = signal;
      signal.addEventListener('abort', () => gate.reject(new Error('cancelled upstream')));
      return gate.promise;
    });
    const second = inFlight.run('k', two.signal, () => Promise.reject(new Error('not started twice')));
    one.abort();
    expect(shared!.aborted).toBe(false);
    two.abort();
    expect(shared!.aborted).toBe(true);
    await expect(first).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    await expect(second).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    await expect(inFlight.run('k', undefined, async () => 'fresh')).resolves.toBe('fresh');
  });

  it('refuses a caller whose signal is already aborted, without starting anything', async () => {
    const inFlight = new InFlight<string>();
    const start = jest.fn(async () => 'x');
    await expect(inFlight.run('k', AbortSignal.abort(), start)).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    expect(start).not.toHaveBeenCalled();
  });
});

describe('coalescingKey', () => {
  it('differs by tenant and by every part of the URL', () => {
    const url = 'https://shard.example.com/api/public/v1/locations/?page_size=100';
    const keys = new Set([
      coalescingKey(TENANT_ID, url),
      coalescingKey(OTHER_TENANT_ID, url),
      coalescingKey(TENANT_ID, 'https://shard.example.com/api/public/v1/locations/?page_size=10'),
      coalescingKey(TENANT_ID, 'https://shard.example.com/api/public/v1/shifts/?page_size=100'),
      coalescingKey(TENANT_ID, 'https://other.example.com/api/public/v1/locations/?page_size=100'),
    ]);
    expect(keys.size).toBe(5);
    expect(coalescingKey(TENANT_ID, `${url}`)).toBe(coalescingKey(TENANT_ID, url));
  });
});
