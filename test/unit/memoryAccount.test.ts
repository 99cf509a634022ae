import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_LIMITS, withLimits } from '../../src/config';
import { DOCUMENT_STORE_BYTES, PERSISTED_QUERY_BYTES } from '../../src/graphql/server/documentStore';
import { UNIT_BYTES } from '../../src/memory/budget';
import { accountSummary, fitToHeap, memoryAccount } from '../../src/memory/account';
import { NUMERIC_SETTINGS } from '../../src/config';

const MiB = 2 ** 20;
/** V8's heap limit with the shipped flags (--max-semi-space-size=8 --max-old-space-size=256). */
const SHIPPED_HEAP = 280 * MiB;
const RESERVE = { entityIndexBytes: NUMERIC_SETTINGS.WFS_ENTITY_INDEX_MAX_RECORDS.default * UNIT_BYTES, documentBytes: DOCUMENT_STORE_BYTES + PERSISTED_QUERY_BYTES };

describe('the memory account', () => {
  it('fits the shipped heap with every bound at its default', () => {
    const account = memoryAccount(DEFAULT_LIMITS, SHIPPED_HEAP, RESERVE);
    expect(account.fits).toBe(true);
    expect(fitToHeap(DEFAULT_LIMITS, SHIPPED_HEAP, RESERVE).kind).toBe('fits');
  });

  it('is the table docs/limits.md shows', () => {
    const page = readFileSync(path.join(__dirname, '..', '..', 'docs', 'limits.md'), 'utf8');
    const table = page.slice(page.indexOf('<!-- memory-account:'), page.indexOf('How the units were found'));
    const rows = table.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| what') && !line.includes('**'));
    const account = memoryAccount(DEFAULT_LIMITS, SHIPPED_HEAP, RESERVE);
    const spaced = (n: number) => n.toLocaleString('en-US').replace(/,/g, ' ');
    const unit = (bytes: number) => (bytes >= MiB ? `${bytes / MiB} MiB` : `${Math.round((bytes / 1024) * 10) / 10} KiB`);
    expect(rows.map((line) => line.split('|').map((cell) => cell.trim())).map((cells) => [cells[1], cells[3], cells[4], cells[5]])).toEqual(
      account.rows.map((row) => [row.name, spaced(row.count), unit(row.unitBytes), (row.bytes / MiB).toFixed(1)]),
    );
    const summary = accountSummary(account);
    expect(table).toContain(`| **every bound filled at once** | | | | **${summary.worstCaseMiB.toFixed(1)}** |`);
    expect(table).toContain(`(280 MiB × 0.85 − ${summary.reservedMiB} MiB) | | | | **${summary.budgetMiB}** |`);
  });

  it('refuses bounds set past what the heap holds, naming them', () => {
    const limits = withLimits(DEFAULT_LIMITS, { connection: { maxConnections: 20_000 } });
    const fitting = fitToHeap(limits, SHIPPED_HEAP, RESERVE);
    expect(fitting).toMatchObject({ kind: 'refused', boundsSet: ['connection.maxConnections'] });
    // The same bound fits a heap large enough for it.
    expect(fitToHeap(limits, 2_048 * MiB, RESERVE).kind).toBe('fits');
  });

  it('scales the defaults down together on a smaller heap, to what fits', () => {
    const small = 184 * MiB;
    const fitting = fitToHeap(DEFAULT_LIMITS, small, RESERVE);
    if (fitting.kind !== 'scaled') throw new Error(`expected the defaults scaled, got ${fitting.kind}`);
    expect(fitting.factor).toBeGreaterThan(0);
    expect(fitting.factor).toBeLessThan(1);
    expect(fitting.account.fits).toBe(true);
    expect(fitting.limits.connection.maxConnections).toBe(Math.floor(DEFAULT_LIMITS.connection.maxConnections * fitting.factor));
    expect(fitting.limits.live.perCompany).toBeLessThanOrEqual(fitting.limits.live.perReplica);
    // What is no count is left alone.
    expect(fitting.limits.query).toEqual(DEFAULT_LIMITS.query);
    expect(fitting.limits.socket.messageBytes).toBe(DEFAULT_LIMITS.socket.messageBytes);
  });

  it('refuses a heap that leaves clients nothing', () => {
    expect(fitToHeap(DEFAULT_LIMITS, 100 * MiB, RESERVE).kind).toBe('refused');
  });
});
