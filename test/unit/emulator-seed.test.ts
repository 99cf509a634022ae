import { demoTenants, generatedTenants, makeTenant } from '../../tools/emulator';

describe('demo tenants', () => {
  const tenants = demoTenants();

  it('are deterministic, fresh objects on every call', () => {
    const again = demoTenants();
    expect(again).toEqual(tenants);
    again[0]!.locations.pop();
    expect(demoTenants()[0]!.locations).toHaveLength(tenants[0]!.locations.length);
  });

  it('spread over two shards, with one company not granted shifts.read', () => {
    expect(new Set(tenants.map((t) => t.shard))).toEqual(new Set([0, 1]));
    expect(tenants.filter((t) => !t.grantedScopes.includes('shifts.read'))).toHaveLength(1);
    expect(new Set(tenants.map((t) => t.tenantId)).size).toBe(tenants.length);
    expect(new Set(tenants.map((t) => t.clientId)).size).toBe(tenants.length);
    for (const t of tenants) expect(t.tenantId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  it('look like real companies: named sites and weeks of shifts from Monday 23 November 2026', () => {
    const [coffee, care] = tenants;
    expect(coffee!.name).toBe('Harbour Lane Coffee');
    expect(coffee!.locations.length).toBeGreaterThanOrEqual(5);
    expect(coffee!.locations[0]!.name).toMatch(/^Harbour Lane Coffee — /);
    expect(care!.locations.length).toBeGreaterThanOrEqual(10);
    for (const t of tenants) {
      const starts = t.shifts.map((s) => Date.parse(s.start));
      expect(starts).toEqual([...starts].sort((a, b) => a - b));
      expect(t.shifts[0]!.start.slice(0, 10)).toBe('2026-11-23');
      expect(new Set(t.shifts.map((s) => s.id)).size).toBe(t.shifts.length);
      const locationIds = new Set(t.locations.map((l) => l.id));
      expect(t.shifts.every((s) => locationIds.has(s.location))).toBe(true);
    }
    expect(coffee!.shifts[0]!.start).toBe('2026-11-23T06:00:00+13:00');
    expect(care!.shifts.some((s) => s.start.endsWith('T22:00:00+00:00') && s.end.endsWith('T07:30:00+00:00'))).toBe(true);
  });

  it('keep the first three as they were (tests and docs name them: 7, 12 and 3 locations) and add one that pages at the documented sizes', () => {
    expect(tenants.map((t) => [t.name, t.locations.length])).toEqual([
      ['Harbour Lane Coffee', 7],
      ['Northfield Care Homes', 12],
      ['Alpenrose Bäckerei', 3],
      ['Maple Ridge Grocers', 130],
    ]);
    const grocer = tenants[3]!;
    expect(grocer.grantedScopes).toEqual(['locations.read', 'shifts.read']);
    // The location picker's `first: 100` has a second page; so do the README's rota (`first: 50`)
    // and its week at one location (`first: 50`, Monday to Monday), at the distribution centre.
    expect(grocer.locations.length).toBeGreaterThan(100);
    expect(new Set(grocer.locations.map((l) => l.name)).size).toBe(grocer.locations.length);
    const depot = grocer.locations[0]!.id;
    const week = grocer.shifts.filter((s) => s.location === depot && Date.parse(s.start) < Date.parse('2026-11-30T00:00:00-05:00'));
    expect(week.length).toBeGreaterThan(50);
    expect(grocer.shifts).toHaveLength(1_932);
    expect(grocer.shifts[0]!.start).toBe('2026-11-23T05:00:00-05:00');
  });
});

describe('makeTenant', () => {
  it('builds n locations and m shifts with stable ids, spread over the locations', () => {
    const t = makeTenant({ tenantId: 't-1', locationCount: 4, shiftCount: 10, shard: 1 });
    expect(t).toEqual(makeTenant({ tenantId: 't-1', locationCount: 4, shiftCount: 10, shard: 1 }));
    expect(t.locations.map((l) => l.id)).toEqual(['001', '002', '003', '004'].map((n) => expect.stringMatching(new RegExp(`^loc_[0-9a-f]{6}_${n}$`))));
    expect(t.shifts[9]!.id).toMatch(/^shf_[0-9a-f]{6}_0010$/);
    expect(new Set(t.shifts.map((s) => s.location)).size).toBe(4);
    expect(t.shifts.some((s) => s.user === null)).toBe(true);
    expect(t.shifts[0]).toMatchObject({ object: 'shift', start: '2026-11-23T06:00:00+01:00', end: '2026-11-23T14:00:00+01:00' });
    expect(t.shard).toBe(1);
    expect(t.grantedScopes).toEqual(['locations.read', 'shifts.read']);
  });

  it('gives different tenants different record ids', () => {
    const ids = (id: string) => makeTenant({ tenantId: id, locationCount: 2, shiftCount: 2 }).locations.map((l) => l.id);
    expect(ids('be0c0000-0000-4000-8000-000000000001')).not.toEqual(ids('be0c0000-0000-4000-8000-000000000002'));
  });

  it('refuses impossible counts', () => {
    expect(() => makeTenant({ tenantId: 'x', locationCount: 0, shiftCount: 1 })).toThrow(RangeError);
    expect(() => makeTenant({ tenantId: 'x', locationCount: -1, shiftCount: 0 })).toThrow(RangeError);
  });
});

describe('generatedTenants', () => {
  it('gives each of 10 000 companies (the memory probe\'s most) its own tenant and client id', () => {
    const tenants = generatedTenants(10_000, { locations: 1, shifts: 0 });
    expect(new Set(tenants.map((tenant) => tenant.tenantId)).size).toBe(10_000);
    expect(new Set(tenants.map((tenant) => tenant.clientId)).size).toBe(10_000);
  });
});
