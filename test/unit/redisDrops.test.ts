import { Writable } from 'node:stream';
import type { RedisDropReason } from '../../src/live/redisMessages';
import { createLogger } from '../../src/observability/logger';
import { REDIS_DROP_LOG_WINDOW_MS, redisDropLog } from '../../src/observability/redisDrops';
import type { RejectedRecordReason } from '../../src/upstream/token/tokenRecord';

/**
 * The warning lines for what a replica drops from Redis (observability/redisDrops.ts):
 * every reason of both stores gets a line that names the key, the reason and a likely
 * cause; one line per key and reason in each 5-minute window, however many are dropped.
 */
const LIVE_REASONS: RedisDropReason[] = ['oversized', 'unsealed', 'forged', 'malformed', 'replayed', 'lease', 'unpublishable'];
const RECORD_REASONS: RejectedRecordReason[] = ['seal', 'shape', 'size'];

function capture() {
  let now = 1_000_000;
  const lines: Array<{ level: number; msg: string; key: string; reason: string }> = [];
  const logger = createLogger('info', new Writable({ write: (chunk, _encoding, done) => (lines.push(JSON.parse(String(chunk))), done()) }));
  return { lines, log: redisDropLog(logger, () => now), advance: (ms: number) => (now += ms) };
}

describe('the log lines of values dropped from Redis', () => {
  it('warn once per reason with the key and a likely cause, for live messages and leases and for token records', () => {
    const { lines, log } = capture();
    for (const reason of LIVE_REASONS) log.liveDropped(reason, `wfs:live:changes:${reason}`);
    for (const reason of RECORD_REASONS) log.tokenRecordRejected(reason, `wfs:token:tenant-${reason}`);
    expect(lines.map(({ level, key, reason }) => ({ level, key, reason }))).toEqual([
      ...LIVE_REASONS.map((reason) => ({ level: 40, key: `wfs:live:changes:${reason}`, reason })),
      ...RECORD_REASONS.map((reason) => ({ level: 40, key: `wfs:token:tenant-${reason}`, reason })),
    ]);
    // Each line says what probably wrote the value, in its own words.
    expect(new Set(lines.map((line) => line.msg)).size).toBe(lines.length);
    const byReason = Object.fromEntries(lines.map((line) => [line.reason, line.msg]));
    expect(byReason['forged']).toMatch(/another deployment on the same WFS_REDIS_KEY_PREFIX with a different WFS_REDIS_KEY, or tampering/);
    expect(byReason['lease']).toMatch(/another deployment on the same WFS_REDIS_KEY_PREFIX.*another version.*tampering/);
    expect(byReason['malformed']).toMatch(/another version/);
    expect(byReason['replayed']).toMatch(/clock/);
    expect(byReason['seal']).toMatch(/another deployment with a different WFS_REDIS_KEY/);
    expect(byReason['shape']).toMatch(/another version/);
  });

  it('write one line per key and reason in each window, and another key or reason its own', () => {
    const { lines, log, advance } = capture();
    for (let i = 0; i < 1_000; i++) log.liveDropped('forged', 'wfs:live:changes:a');
    log.liveDropped('unsealed', 'wfs:live:changes:a');
    log.liveDropped('forged', 'wfs:live:changes:b');
    for (let i = 0; i < 10; i++) log.tokenRecordRejected('seal', 'wfs:token:t1');
    expect(lines.map((line) => `${line.reason} ${line.key}`)).toEqual(['forged wfs:live:changes:a', 'unsealed wfs:live:changes:a', 'forged wfs:live:changes:b', 'seal wfs:token:t1']);
    advance(REDIS_DROP_LOG_WINDOW_MS - 1);
    log.liveDropped('forged', 'wfs:live:changes:a');
    expect(lines).toHaveLength(4);
    advance(1);
    log.liveDropped('forged', 'wfs:live:changes:a');
    expect(lines).toHaveLength(5);
  });
});
