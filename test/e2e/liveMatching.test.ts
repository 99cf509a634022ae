import type { Client } from 'graphql-ws';
import { request } from 'undici';
import { makeTenant, startEmulator, type Emulator, type EmulatorTenant } from '../../tools/emulator';
import { startBuiltServer, type BuiltServer } from '../helpers/builtServer';
import { collect, liveClient, type Received } from '../helpers/liveClient';
import { parseSamples, scrapeText, total } from '../helpers/metrics';
import { emulatorEnv } from '../helpers/postGraphQL';
import { waitFor } from '../helpers/waitFor';

/**
 * One company's live matching must not stall the event loop for every company
 * (docs/live.md, "How it polls"). The hub tried each distinct filter on
 * each change in one synchronous loop: 3 000 `startsFrom` windows that match nothing
 * and 2 000 changed shifts a poll held the loop 2.3 s a poll, and another company's
 * worst query took 2 230 ms instead of 37. Now a change finds its filters by lookup and
 * the deliveries run in slices that give the loop back.
 *
 * The built server as the image runs it (`node --max-semi-space-size=8
 * --max-old-space-size=256 dist/index.js`) against the emulator, whose records the test
 * edits between polls as a manager would (thousands at once: a rota regenerated). A
 * second company queries in a loop the whole time, a query every 20 ms or so; its worst
 * latency is the figure the issue bounds. A control phase first (the same polls, nothing
 * changed) measures what the machine alone does to that figure; each phase also reads
 * the server's own largest event-loop delay (`nodejs_eventloop_lag_max_seconds`, since
 * the previous scrape), shown with the figures when the bound fails. Measured (2-core
 * machine at load 13–16), queries back to back: before, worst 4 506 ms against 277 ms in
 * the control (loop delay 4 454 ms); now 233 ms against 222 ms (loop delay 88 ms). A
 * query every 20 ms (load 7–13): before 2 568 and 5 708 ms against 128 and 150 ms; now
 * 102–199 ms against 45–223 ms.
 */
/** Distinct filters: the bound per company (`filtersPerCompany`), all open at once. */
const FILTERS = 1_000;
const SHIFTS = 4_000;
/** Shifts changed before each poll. */
const CHANGED = 2_000;
const POLLS = 3;
/**
 * The pause between one query of the quiet company and the next. A stall is still met
 * within 20 ms of its start, far under the bound's 250 ms, and the phases send a tenth of
 * the queries they sent back to back (each a request to the server and a page of the
 * emulator's: most of the suite's CPU).
 */
const QUERY_GAP_MS = 20;
/** The worst latency the issue allows another company's queries. */
const WORST_MS = 250;
const SHIFT_CHANGES = 'subscription($from: DateTime) { shiftChanges(filter: { startsFrom: $from }) { kind nodeId } }';
const QUIET_QUERY = '{ shifts(first: 20) { nodes { id start location { id name } } } }';

describe("live matching of the built server: one company's thousands of filters and changes leave another's queries their turns", () => {
  let emulator: Emulator;
  let server: BuiltServer;
  let url: string;
  let busy: EmulatorTenant;
  const clients: Client[] = [];

  const samples = async () => parseSamples(await scrapeText(url));

  beforeAll(async () => {
    busy = makeTenant({ tenantId: 'busy', locationCount: 10, shiftCount: SHIFTS });
    emulator = await startEmulator({ tenants: [busy, makeTenant({ tenantId: 'quiet', locationCount: 2, shiftCount: 20 })] });
    server = await startBuiltServer({
      ...emulatorEnv(emulator),
      // The smallest interval the settings allow: a poll a second.
      WFS_POLL_INTERVAL_SECONDS: '1',
    });
    url = server.url;
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.dispose()));
    await server?.stop();
    await emulator?.close();
  });

  it(`keeps another company's worst query under ${WORST_MS} ms while ${CHANGED} shifts change each poll under ${FILTERS} distinct windows that match none`, async () => {
    const flooder = liveClient(url, { 'x-tenant-id': 'busy' });
    clients.push(flooder);
    // Windows that start in 2100: distinct, and none holds a shift.
    const far = Date.parse('2100-01-01T00:00:00Z');
    const flood: Received[] = [];
    for (let i = 0; i < FILTERS; i++) flood.push(collect(flooder, SHIFT_CHANGES, { from: new Date(far + i * 60_000).toISOString() }));
    // A scrape every 50 ms: each is work for the server while it takes the subscribes.
    await waitFor(async () => total(await samples(), 'wfs_live_subscriptions') === FILTERS, 'every subscription open', 30_000, 50);
    // The emulator's own count of the busy company's shift pages: waiting on it costs
    // the server nothing (a scrape of /metrics would, every few ms).
    const shiftCalls = () => emulator.counters.listRequestsByTenant.busy?.shifts ?? 0;
    const pagesPerWalk = Math.ceil(SHIFTS / 100);
    // The baseline and one poll after it: the busy company's poller is in its stride.
    await waitFor(() => shiftCalls() >= 2 * pagesPerWalk, 'the first polls', 20_000);

    const query = async () => {
      const response = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tenant-id': 'quiet' }, body: JSON.stringify({ query: QUIET_QUERY }) });
      const body = (await response.body.json()) as { data?: { shifts: { nodes: unknown[] } }; errors?: unknown };
      if (response.statusCode !== 200 || !body.data) throw new Error(`the quiet company's query failed: ${response.statusCode} ${JSON.stringify(body)}`);
      return body.data.shifts.nodes.length;
    };
    // Its token fetched and its list read once, before any timing.
    expect(await query()).toBe(20);

    const changed = async () => total(await samples(), 'wfs_live_changes_total', { list: 'shifts' });

    /**
     * The quiet company queries one query after another through `POLLS` polls of the
     * busy company's list (`edit`: with `CHANGED` shifts edited before each): its worst
     * latency, and the server's largest event-loop delay over the same time.
     */
    const phase = async (edit: boolean) => {
      const latencies: number[] = [];
      let querying = true;
      const queries = (async () => {
        while (querying) {
          const started = performance.now();
          await query();
          latencies.push(performance.now() - started);
          // Time is the subject: the quiet company's pace (QUERY_GAP_MS says why this one).
          await new Promise((resolve) => setTimeout(resolve, QUERY_GAP_MS));
        }
      })();
      // This scrape starts the server's largest loop delay again: the one at the end covers the polls below.
      await samples();
      for (let poll = 1; poll <= POLLS; poll++) {
        // Half the company's shifts end a minute later, all at once.
        if (edit) for (const shift of busy.shifts.slice(0, CHANGED)) shift.end = new Date(Date.parse(shift.end) + 60_000).toISOString();
        // The end of the walk under way, if one is, and of the next: a whole walk whose
        // pages were all served after the edit (the emulator counts a page as it builds it).
        const calls = shiftCalls();
        const walked = (Math.ceil(calls / pagesPerWalk) + 1) * pagesPerWalk;
        await waitFor(() => shiftCalls() >= walked, `poll ${poll} of ${POLLS}`, 20_000);
      }
      // The work after the last poll (the matching) is done within a few more queries.
      const answered = latencies.length;
      await waitFor(() => latencies.length >= answered + 5, 'five more queries');
      querying = false;
      await queries;
      return { worstMs: Math.round(Math.max(...latencies)), loopLagMs: Math.round(total(await samples(), 'nodejs_eventloop_lag_max_seconds') * 1000), queries: latencies.length };
    };

    // Time is the subject: the issue bounds another company's worst query latency, 250 ms
    // (2 230 ms before; in this test 2.9 to 5.9 s, one stall a poll, on a 2-core machine
    // at load 15). A machine that loaded delays any query by hundreds of ms now and
    // then, changes or not: the bound is then twice the worst of the control phase. And
    // the test line's busiest minute (the suites that start the built server, a copy's
    // lint and typecheck) can put one such delay into the busy phase alone: a second pair
    // of phases is measured then, and one pair must hold. The matching of before fails
    // every pair by seconds (one stall a poll), so a second pair cannot let it pass.
    const attempts: Array<Record<string, unknown>> = [];
    for (let attempt = 1; attempt <= 2; attempt++) {
      // The machine's own noise: the same polls, nothing changed.
      const control = await phase(false);
      const changedBefore = await changed();
      const busyPhase = await phase(true);
      expect(await changed()).toBeGreaterThanOrEqual(changedBefore + POLLS * CHANGED);
      expect(server.alive()).toBe(true);
      // None of the windows holds a shift: nothing was delivered.
      expect(flood.filter((received) => received.error !== undefined || received.results.length > 0)).toEqual([]);
      expect(busyPhase.queries).toBeGreaterThan(POLLS);
      const boundMs = Math.max(WORST_MS, 2 * control.worstMs);
      attempts.push({ attempt, control, busyPhase, boundMs, within: busyPhase.worstMs < boundMs });
      if (busyPhase.worstMs < boundMs) break;
    }
    expect(attempts.some((measured) => measured['within'] === true) ? 'within' : attempts).toBe('within');
  }, 90_000);
});
