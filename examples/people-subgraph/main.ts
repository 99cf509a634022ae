import { startPeopleSubgraph } from './server';

/**
 * Runs the example people subgraph on its own, for a local router:
 * `npm run people` (PORT defaults to 4002, the routing URL in router/supergraph.yaml;
 * HOST defaults to 127.0.0.1, set 0.0.0.0 in a container).
 */
async function main(): Promise<void> {
  const port = Number(process.env['PORT'] ?? 4002);
  const subgraph = await startPeopleSubgraph({ port, ...(process.env['HOST'] && { host: process.env['HOST'] }) });
  process.stdout.write(`People subgraph ready at ${subgraph.url}\n`);
  const stop = (): void => {
    void subgraph.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`people subgraph: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
