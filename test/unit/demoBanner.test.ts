import { loadConfig } from '../../src/config';
import { DEMO_CHURN_MS, DEMO_POLL_INTERVAL_SECONDS, demoBanner, liveArrival, startDemo, type Demo } from '../../src/demo';

/**
 * What the demo banner says about live updates is what the demo does: the emulator edits
 * a shift every DEMO_CHURN_MS, and the demo polls every DEMO_POLL_INTERVAL_SECONDS (well
 * under it) unless WFS_POLL_INTERVAL_SECONDS is set, so each edit arrives on its own.
 */
describe('the demo and its banner on live updates', () => {
  const started: Demo[] = [];
  afterAll(async () => {
    for (const demo of started) await demo.emulator.close();
  });
  const demoWith = async (env: Record<string, string>) => {
    const demo = await startDemo(loadConfig({ PORT: '0', HOST: '127.0.0.1', ...env }), env);
    started.push(demo);
    return demo;
  };

  it('polls faster than the emulator edits, unless WFS_POLL_INTERVAL_SECONDS says otherwise', async () => {
    expect(DEMO_POLL_INTERVAL_SECONDS * 1.1).toBeLessThan(DEMO_CHURN_MS / 1000);
    expect((await demoWith({})).config.pollIntervalSeconds).toBe(DEMO_POLL_INTERVAL_SECONDS);
    expect((await demoWith({ WFS_POLL_INTERVAL_SECONDS: '15' })).config.pollIntervalSeconds).toBe(15);
    expect((await demoWith({ WFS_POLL_INTERVAL_SECONDS: '1' })).config.pollIntervalSeconds).toBe(1);
  });

  it('states the interval the demo polls at and when edits arrive', async () => {
    const fast = demoBanner(await demoWith({}), 'http://localhost:4001/graphql');
    expect(fast).toContain(`edits one\nof its shifts every ${DEMO_CHURN_MS / 1000} s; the subgraph polls it every ${DEMO_POLL_INTERVAL_SECONDS} s`);
    expect(fast).toContain('each edit arrives on its own, within 3 s of being made (the first within 11 s of subscribing)');
    const slow = demoBanner(await demoWith({ WFS_POLL_INTERVAL_SECONDS: '15' }), 'http://localhost:4001/graphql');
    expect(slow).toContain('polls it every 15 s');
    expect(slow).toContain('the edits made between two polls arrive together');
    expect(slow).not.toContain('on its own');
  });

  it('states the freshness window the demo runs with', async () => {
    expect(demoBanner(await demoWith({}), 'http://localhost:4001/graphql')).toContain('Freshness: WFS_FRESHNESS_SECONDS=0, every read goes upstream and every answer is no-store');
    expect(demoBanner(await demoWith({ WFS_FRESHNESS_SECONDS: '5' }), 'http://localhost:4001/graphql')).toContain('Freshness: WFS_FRESHNESS_SECONDS=5, an answer may be up to 5 s behind the upstream');
  });

  it('bounds the first arrival by the first poll at or after the first edit (polls up to 10 % late)', () => {
    // An edit every 10 s; polls at most 2.2 s apart: the 5th poll, by 11 s. At 15 s: the 1st, by 16.5 s.
    expect(liveArrival(2)).toContain('the first within 11 s');
    expect(liveArrival(15)).toContain('the first within 17 s');
    expect(liveArrival(1)).toContain('within 2 s of being made');
  });
});
