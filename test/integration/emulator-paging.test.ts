import { request } from 'undici';
import { testTenant, tokenFor } from '../helpers/fixtures';
import { demoTenants, makeTenant, startEmulator, type Emulator, type PageReferenceFormat } from '../../tools/emulator';

const A = testTenant('a', { locations: 23, shifts: 150 });
const B = testTenant('b', { locations: 3, shifts: 4 });
const LOCATIONS = '/api/public/v1/locations/';
const SHIFTS = '/api/public/v1/shifts/';

async function get(url: string, token: string): Promise<{ status: number; json: any }> {
  const response = await request(url, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.statusCode, json: await response.body.json().catch(() => undefined) };
}

/** Resolves a `next`/`previous` as a client following docs/upstream.md, "Page references" would. */
function follow(em: Emulator, shard: number, path: string, reference: string, format: PageReferenceFormat): string {
  if (format === 'absolute') return reference;
  if (format === 'relative') return `${em.shardUrls[shard]}${reference}`;
  return `${em.shardUrls[shard]}${path}?cursor=${encodeURIComponent(reference)}&page_size=7`;
}

let em: Emulator;
let tokenA: string;
beforeAll(async () => {
  em = await startEmulator({ tenants: [A, B] });
  tokenA = await tokenFor(em, A);
});
afterAll(() => em.close());
afterEach(() => {
  em.configure({ pageReferenceFormat: 'absolute' });
  em.setEnvelopeRewriter(undefined);
});

describe.each<PageReferenceFormat>(['absolute', 'relative', 'token'])('paging with %s references', (format) => {
  it.each([LOCATIONS, SHIFTS])('walks every record of %s exactly once, and back', async (path) => {
    em.configure({ pageReferenceFormat: format });
    const expected = (path === LOCATIONS ? A.locations : A.shifts).map((record) => record.id);
    const seen: string[] = [];
    let url: string | null = `${em.shardUrls[0]}${path}?page_size=7`;
    let page: any;
    let pages = 0;
    while (url) {
      page = (await get(url, tokenA)).json;
      expect(page.object).toBe('list');
      expect(page.previous === null).toBe(pages === 0);
      expect(page.has_more).toBe(page.next !== null);
      seen.push(...page.data.map((record: { id: string }) => record.id));
      pages += 1;
      url = page.next && follow(em, 0, path, page.next, format);
      if (url) expect(url).toMatch(format === 'absolute' ? new RegExp(`^${em.shardUrls[0]}${path}\\?cursor=[^&]+&page_size=7$`) : /./);
    }
    expect(seen).toEqual(expected);
    expect(pages).toBe(Math.ceil(expected.length / 7));
    if (format === 'relative') expect(page.previous).toMatch(new RegExp(`^${path}\\?cursor=`));
    if (format === 'token') expect(page.previous).not.toMatch(/^\d+$|[/?&]/);
    const back = (await get(follow(em, 0, path, page.previous, format), tokenA)).json;
    expect(back.data.map((record: { id: string }) => record.id)).toEqual(seen.slice((pages - 2) * 7, (pages - 1) * 7));
  });
});

describe('page size and cursors', () => {
  const base = () => `${em.shardUrls[0]}${LOCATIONS}`;

  it('uses the default page size, clamps to the maximum, and keeps the size in the cursor', async () => {
    expect((await get(base(), tokenA)).json.data).toHaveLength(20);
    const clampEm = await startEmulator({ tenants: [makeTenant({ tenantId: 'big', locationCount: 130, shiftCount: 0 })], maxPageSize: 100 });
    try {
      const token = await tokenFor(clampEm, clampEm.tenants[0]!);
      const page = (await get(`${clampEm.shardUrls[0]}${LOCATIONS}?page_size=1000`, token)).json;
      expect(page.data).toHaveLength(100);
      expect(page.next).toMatch(/page_size=100$/);
    } finally {
      await clampEm.close();
    }
    em.configure({ pageReferenceFormat: 'token' });
    const first = (await get(`${base()}?page_size=5`, tokenA)).json;
    expect((await get(`${base()}?cursor=${first.next}`, tokenA)).json.data).toHaveLength(5);
    expect((await get(`${base()}?cursor=${first.next}&page_size=2`, tokenA)).json.data.map((l: { id: string }) => l.id)).toEqual([A.locations[5]!.id, A.locations[6]!.id]);
  });

  it.each(['page_size=0', 'page_size=-1', 'page_size=1.5', 'page_size=abc', 'page_size=', 'page_size=5&page_size=6', 'cursor=', 'cursor=12', 'cursor=eyJvIjoxMH0'])(
    'answers 400 for %s',
    async (query) => {
      expect((await get(`${base()}?${query}`, tokenA)).status).toBe(400);
    },
  );

  it('refuses a tampered cursor, and a cursor of another list or tenant', async () => {
    em.configure({ pageReferenceFormat: 'token' });
    const next: string = (await get(`${base()}?page_size=5`, tokenA)).json.next;
    const [payload, signature] = next.split('.');
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), o: 0 })).toString('base64url');
    expect((await get(`${base()}?cursor=${forged}.${signature}`, tokenA)).status).toBe(400);
    expect((await get(`${em.shardUrls[0]}${SHIFTS}?cursor=${next}`, tokenA)).status).toBe(400);
    const tokenB = await tokenFor(em, B);
    expect((await get(`${em.shardUrls[1]}${LOCATIONS}?cursor=${next}`, tokenB)).status).toBe(400);
  });

  it('lets a test rewrite the envelope (hostile upstream)', async () => {
    const seen: unknown[] = [];
    em.setEnvelopeRewriter((envelope, ctx) => {
      seen.push(ctx);
      return { ...envelope, next: 'https://evil.example.net/api/public/v1/locations/?cursor=x' };
    });
    const page = (await get(`${base()}?page_size=5`, tokenA)).json;
    expect(page.next).toBe('https://evil.example.net/api/public/v1/locations/?cursor=x');
    expect(seen).toEqual([{ tenantId: A.tenantId, list: 'locations' }]);
  });
});

describe('records', () => {
  it('serves shifts with offsets, open shifts and extra fields, on the tenant own locations', async () => {
    const demo = await startEmulator();
    try {
      for (const tenant of demo.tenants.filter((t) => t.grantedScopes.includes('shifts.read'))) {
        const token = await tokenFor(demo, tenant);
        const shifts = (await get(`${demo.shardUrls[tenant.shard]}${SHIFTS}?page_size=100`, token)).json.data as any[];
        const locationIds = new Set(tenant.locations.map((l) => l.id));
        expect(shifts).toHaveLength(100);
        for (const shift of shifts) {
          expect(shift).toMatchObject({ object: 'shift', id: expect.stringMatching(/^shf_/), role: expect.any(String), break_minutes: expect.any(Number) });
          expect(shift.start).toMatch(/^2026-1[12]-\d\dT\d\d:\d\d:00[+-]\d\d:\d\d$/);
          expect(Date.parse(shift.end)).toBeGreaterThan(Date.parse(shift.start));
          expect(locationIds.has(shift.location)).toBe(true);
          expect(shift.user === null || /^usr_/.test(shift.user)).toBe(true);
        }
      }
      expect(demoTenants().flatMap((t) => t.shifts).some((s) => s.user === null)).toBe(true);
    } finally {
      await demo.close();
    }
  });
});
