import { Pool, request } from 'undici';
import WebSocket from 'ws';
import { startBuiltServer, type BuiltServer } from '../helpers/builtServer';
import { wsUrl } from '../helpers/liveClient';
import { startReadyBalancer, type ReadyBalancer } from '../helpers/readyBalancer';
import { waitFor } from '../helpers/waitFor';

/**
 * A rolling update behind a TCP balancer (docs/operations.md, "Health, readiness and
 * shutdown"): two built servers as the image runs them, a layer-4 balancer that checks
 * `/ready` every 50 ms, and a client keeping a pool of kept-alive connections busy with a
 * steady load. One replica gets SIGTERM. Before the drain it closed its idle connections
 * and its port within milliseconds: requests already on their way down a kept-alive
 * connection were reset, and connections the balancer opened before its next check were
 * refused. Now it drains for WFS_DRAIN_SECONDS (short here) and not one request is lost.
 */
/**
 * 2 s: forty of the balancer's checks, where it needs one to take the replica out and the
 * test two requests to it after that. The steady load keeps both cores busy for as long
 * as the drain lasts, so each second of it costs two CPU-seconds.
 */
const DRAIN_SECONDS = 2;
const POLL_MS = 50;
const QUERY = JSON.stringify({ query: '{ locations(first: 1) { nodes { id } } }' });

describe('SIGTERM behind a balancer that checks /ready', () => {
  let replicas: BuiltServer[] = [];
  let balancer: ReadyBalancer | undefined;
  let pool: Pool | undefined;
  let load: { stop(): Promise<void> } | undefined;
  afterEach(async () => {
    await load?.stop();
    await pool?.destroy();
    await balancer?.close();
    await Promise.all(replicas.map((replica) => replica.stop()));
    replicas = [];
  });

  it('drains: /ready answers 503, answers close their connections, WebSockets get 1001, and a steady load loses no request', async () => {
    replicas = await Promise.all([0, 1].map(() => startBuiltServer({ WFS_DRAIN_SECONDS: String(DRAIN_SECONDS) })));
    const [leaving, staying] = replicas.map((replica) => new URL(replica.url).origin) as [string, string];
    balancer = await startReadyBalancer([leaving, staying], POLL_MS);
    await waitFor(() => balancer!.inRotation(leaving) && balancer!.inRotation(staying), 'both replicas in rotation');

    // A live client on the leaving replica: it must get a close it can act on (1001, go away), not a cut.
    const socket = new WebSocket(wsUrl(replicas[0]!.url), 'graphql-transport-ws');
    let acknowledged = false;
    let closeCode: number | undefined;
    socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: {} })));
    socket.on('message', (data) => (acknowledged ||= (JSON.parse(String(data)) as { type: string }).type === 'connection_ack'));
    socket.on('close', (code) => (closeCode = code));
    await waitFor(() => acknowledged, 'the WebSocket to be acknowledged');

    // The steady load: 4 kept-alive connections to the balancer, each always busy.
    pool = new Pool(balancer.origin, { connections: 4 });
    const failures: string[] = [];
    let answered = 0;
    let loading = true;
    const client = async (): Promise<void> => {
      while (loading) {
        try {
          const response = await pool!.request({ path: '/graphql', method: 'POST', headers: { 'content-type': 'application/json' }, body: QUERY });
          const body = (await response.body.json()) as { errors?: unknown[] };
          if (response.statusCode === 200 && !body.errors) answered += 1;
          else failures.push(`${response.statusCode} ${JSON.stringify(body).slice(0, 200)}`);
        } catch (error) {
          failures.push(`${(error as { code?: string }).code ?? ''} ${(error as Error).message}`);
        }
      }
    };
    const clients = [0, 1, 2, 3].map(() => client());
    load = {
      async stop() {
        loading = false;
        await Promise.all(clients);
      },
    };
    await waitFor(() => answered >= 50 && balancer!.connections(leaving) > 0 && balancer!.connections(staying) > 0, 'load on both replicas');

    const exited = new Promise<number | null>((resolve) => replicas[0]!.child.once('exit', (code) => resolve(code)));
    replicas[0]!.child.kill('SIGTERM');
    // What the draining replica shows once the balancer took it out (read now, asserted below).
    const duringDrain = (async () => {
      await waitFor(() => !balancer!.inRotation(leaving), 'the balancer to take the draining replica out');
      const ready = await request(`${leaving}/ready`);
      const served = await request(replicas[0]!.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: QUERY });
      return {
        ready: { status: ready.statusCode, body: await ready.body.json() },
        served: { status: served.statusCode, connection: served.headers['connection'], body: await served.body.json() },
        webSocket: socket.readyState,
      };
    })();
    duringDrain.catch(() => undefined);

    expect(await exited).toBe(0);
    // The load goes on through the replica that stays, then stops.
    const after = answered;
    await waitFor(() => answered >= after + 50, 'more answers from the replica that stays');
    await load.stop();
    expect(failures).toEqual([]);
    expect(balancer.refused).toBe(0);

    // While it drained: /ready said why, answers still came and closed their connection,
    // the WebSocket was still open; it was closed with 1001 before the process left.
    expect(await duringDrain).toEqual({
      ready: { status: 503, body: { status: 'draining', reason: expect.stringMatching(/^shutting down: .*stops accepting connections$/) } },
      served: { status: 200, connection: 'close', body: expect.objectContaining({ data: { locations: { nodes: [{ id: expect.any(String) }] } } }) },
      webSocket: WebSocket.OPEN,
    });
    await waitFor(() => closeCode !== undefined, 'the WebSocket to close');
    expect(closeCode).toBe(1001);
    expect(replicas[0]!.stdout()).toMatch(new RegExp(`"drainSeconds":${DRAIN_SECONDS},"msg":"draining: `));
  }, 90_000);
});
