import { Writable } from 'node:stream';
import { createLogger } from '../../src/observability/logger';
import type { RequestRecord } from '../../src/upstream/observer';
import { runInScope, setTraceIdProvider } from '../../src/observability/requestScope';

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('info', new Writable({ write: (chunk, _encoding, done) => (lines.push(JSON.parse(String(chunk)) as Record<string, unknown>), done()) }));
  return { logger, lines };
}

const scope = (requestId: string): RequestRecord => ({ requestId, startedAt: 0, aborted: false, upstreamCalls: 0, coalesced: 0 });

describe('request scope on log lines', () => {
  afterEach(() => setTraceIdProvider(undefined));

  it('adds the request id to every line written inside the scope, across awaits and event-loop turns, and none outside', async () => {
    const { logger, lines } = capture();
    logger.info('before');
    await runInScope(scope('req-a'), async () => {
      logger.info('inside');
      await new Promise((resolve) => setImmediate(resolve));
      logger.info('after a turn');
    });
    await Promise.all([runInScope(scope('req-b'), async () => logger.info('b')), runInScope(scope('req-c'), async () => logger.info('c'))]);
    expect(lines.map((line) => [line.msg, line.requestId])).toEqual([
      ['before', undefined],
      ['inside', 'req-a'],
      ['after a turn', 'req-a'],
      ['b', 'req-b'],
      ['c', 'req-c'],
    ]);
  });

  it('adds the trace id from the registered provider (observability/index.ts registers the tracer one when tracing is on)', () => {
    const { logger, lines } = capture();
    setTraceIdProvider(() => '4bf92f3577b34da6a3ce929d0e0e4736');
    runInScope(scope('req-t'), () => logger.info('traced'));
    expect(lines[0]).toMatchObject({ requestId: 'req-t', traceId: '4bf92f3577b34da6a3ce929d0e0e4736' });
  });
});
