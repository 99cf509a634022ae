import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBuiltServer, type BuiltServer } from '../helpers/builtServer';
import { postGraphQL } from '../helpers/subgraph';

/**
 * Issue "Armor", finding 1, against the built server with the shipped flags: graphql-jit
 * wrote a string literal marked as a date into generated code unescaped, so a document
 * sent ten times ran the client's code in the replica, before any authentication. Now
 * nothing a client writes reaches generated code (src/graphql/server/canonicalOperation.ts).
 */

const MARKER = '__MAGIC_DATE__33a9e76d_02e0_4128_8e92_3530ad3da74d';

let server: BuiltServer;
beforeAll(async () => {
  server = await startBuiltServer();
});
afterAll(async () => {
  await server?.stop();
});

it.each([
  ['a known tenant', { 'x-tenant-id': '7c1e9a42-5b3d-4f8e-9a61-2d4b8c0e1f35' }],
  ['an unknown tenant', { 'x-tenant-id': '00000000-0000-4000-8000-000000000000' }],
])('runs no client code from a marked literal sent past the compile threshold, for %s', async (_who, headers) => {
  const target = join(mkdtempSync(join(tmpdir(), 'wfs-armor-')), 'owned');
  const payload = `${MARKER}(process.getBuiltinModule('fs').writeFileSync('${target}', 'owned'), 0)`;
  const queries = [
    `{ shift(id: "${payload}") { id } }`,
    `{ shifts(first: 1, filter: { locationId: "${payload}" }) { nodes { id } } }`,
    `{ _entities(representations: [{ __typename: "Shift", id: "${payload}" }]) { __typename } }`,
    `query Q($id: ID! = "${payload}") { shift(id: $id) { id } }`,
  ];
  for (const query of queries) {
    // Past the compile threshold (ten runs) with room to spare.
    for (let run = 0; run < 12; run++) {
      const answer = await postGraphQL(server.url, { query }, headers);
      expect([200, 400]).toContain(answer.status);
    }
  }
  expect(existsSync(target)).toBe(false);
  expect(server.alive()).toBe(true);
});
