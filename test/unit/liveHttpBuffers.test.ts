import type { ServerResponse } from 'node:http';
import { dropOverReplica, type LiveHttpOptions } from '../../src/http/liveHttp';

/** A stream as the check sees it: what its client left unread, and whether it was dropped. */
function stream(unread: number): ServerResponse & { dropped: boolean } {
  const fake = { writableLength: unread, dropped: false, destroy: () => ((fake.dropped = true), fake) };
  return fake as unknown as ServerResponse & { dropped: boolean };
}

function options(socketsBuffered: number, dropped: string[]): LiveHttpOptions {
  return {
    bufferedBytesPerReplica: 100,
    socketsBuffered: () => socketsBuffered,
    slowConsumerDropped: () => void dropped.push('dropped'),
    logger: { debug: () => undefined } as unknown as LiveHttpOptions['logger'],
  } as unknown as LiveHttpOptions;
}

/**
 * SSE and multipart streams share the WebSocket connections' per-replica bound on
 * answers their clients have not read (the memory account's one row for them): past
 * it, the streams holding the most are dropped until the rest fit, each counted.
 */
describe("HTTP subscription streams: the replica's bound on unread answers", () => {
  it('drops nothing while streams and sockets together are within the bound', () => {
    const streams = [stream(30), stream(20)];
    const dropped: string[] = [];
    dropOverReplica(new Set(streams), options(50, dropped));
    expect(streams.map((s) => s.dropped)).toEqual([false, false]);
    expect(dropped).toEqual([]);
  });

  it('drops the streams holding the most until the rest fit, counting each, and never a stream that holds nothing', () => {
    const streams = [stream(10), stream(60), stream(0), stream(40)];
    const dropped: string[] = [];
    // 50 held by WebSocket connections: 160 in all, 60 over; the 60-byte stream goes, then 100 fit.
    dropOverReplica(new Set(streams), options(50, dropped));
    expect(streams.map((s) => s.dropped)).toEqual([false, true, false, false]);
    expect(dropped).toHaveLength(1);
    // The sockets alone over the bound: every stream that holds something goes, none that holds nothing.
    const again = [stream(10), stream(0)];
    dropOverReplica(new Set(again), options(150, []));
    expect(again.map((s) => s.dropped)).toEqual([true, false]);
  });
});
