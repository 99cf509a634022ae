import { instantOf, isRfc3339DateTime, locations, MAX_DATE_TIME_LENGTH, memoisedDateTimes, normalizeDateTime, RESOURCES, ResourceSet, shifts, defineResource } from '../../src/upstream/resources';

describe('date-times, checked in one place', () => {
  it.each(['2026-02-30T09:00:00Z', '2026-02-29T09:00:00Z', '2026-11-23T24:00:00Z', '2026-11-23T09:60:00Z', '2026-11-23T09:00:60Z', '2026-13-01T09:00:00Z', '2026-11-00T09:00:00Z', '2026-11-23T09:00:00+24:00', '2026-11-23T09:00:00+01:60'])(
    'refuses the impossible %s',
    (value) => {
      expect(normalizeDateTime(value)).toBeNull();
      expect(isRfc3339DateTime(value)).toBe(false);
    },
  );

  it.each(['2028-02-29T09:00:00Z', '2026-12-31T23:59:59.999999999-12:00', '2026-11-23T00:00:00+14:00'])('accepts the possible %s', (value) => {
    expect(normalizeDateTime(value)).toBe(value);
    expect(isRfc3339DateTime(value)).toBe(true);
  });

  it('refuses a date-time of a megabyte without remembering it (the memo holds only short texts)', () => {
    const before = memoisedDateTimes();
    for (let i = 0; i < 20; i += 1) {
      const huge = `2026-11-23T09:00:00Z${' '.repeat(1_000_000)}${i}`;
      expect(normalizeDateTime(huge)).toBeNull();
      expect(isRfc3339DateTime(huge)).toBe(false);
      expect(instantOf(huge)).toBeNull();
    }
    expect(memoisedDateTimes()).toBe(before);
    // Spaces around a date-time within the bound are still taken, as before.
    expect(normalizeDateTime(`  2026-11-23T09:00:00Z${' '.repeat(MAX_DATE_TIME_LENGTH - 30)}`)).toBe('2026-11-23T09:00:00Z');
  });

  it('compares instants, whatever the offset', () => {
    expect(instantOf('2026-11-23T09:00:00+01:00')).toBe(instantOf('2026-11-23T08:00:00Z'));
    expect(instantOf('2026-11-23T09:00:00')).toBeNull();
    expect(instantOf(null)).toBeNull();
  });
});

describe('the resource registry', () => {
  it('names each list once, with its path, scope and GraphQL type', () => {
    expect(RESOURCES.map((r) => [r.name, r.typename, r.path, r.scope])).toEqual([
      ['locations', 'Location', '/api/public/v1/locations/', null],
      ['shifts', 'Shift', '/api/public/v1/shifts/', 'shifts.read'],
    ]);
  });

  it('finds a resource by name, type name and path, and refuses two resources with one name, type or path', () => {
    const set = new ResourceSet(RESOURCES);
    expect(set.named('shifts')).toBe(shifts);
    expect(set.typed('Location')).toBe(locations);
    expect(set.atPath('/api/public/v1/locations/')).toBe(locations);
    expect(set.atPath('/api/public/v1/locations')).toBeUndefined();
    const twin = (patch: object) => defineResource({ ...locations, name: 'other', typename: 'Other', path: '/api/public/v1/other/', ...patch });
    expect(() => new ResourceSet([...RESOURCES, twin({ name: 'locations' })])).toThrow(/named/);
    expect(() => new ResourceSet([...RESOURCES, twin({ typename: 'Location' })])).toThrow(/GraphQL type/);
    expect(() => new ResourceSet([...RESOURCES, twin({ path: '/api/public/v1/locations/' })])).toThrow(/served at/);
    expect(() => twin({ path: '/api/public/v1/other' })).toThrow(/start and end/);
  });

  it('maps "an id or { id }" the same way for every reference', () => {
    const base = { object: 'shift', id: 's1', start: null, end: null };
    expect(shifts.map({ ...base, location: 'l1', user: { id: 7 } })).toMatchObject({ locationId: 'l1', userId: '7' });
    expect(shifts.map({ ...base, location: { id: 'l1' }, user: null })).toMatchObject({ locationId: 'l1', userId: null });
  });

  it('filters shifts by location and by start instant, startsFrom inclusive and startsBefore exclusive', () => {
    const shift = shifts.map({ object: 'shift', id: 's1', location: 'l1', start: '2026-11-23T09:00:00+01:00' }) as Parameters<NonNullable<typeof shifts.matches>>[0];
    const filter = (input: Record<string, unknown>) => shifts.filterFrom!(input);
    expect(shifts.matches!(shift, filter({ locationId: 'l1', startsFrom: '2026-11-23T08:00:00Z' }))).toBe(true);
    expect(shifts.matches!(shift, filter({ startsBefore: '2026-11-23T08:00:00Z' }))).toBe(false);
    expect(shifts.matches!(shift, filter({ locationId: 'l2' }))).toBe(false);
    expect(filter({ startsFrom: '2026-11-23T09:00:00+01:00' })).toEqual(filter({ startsFrom: '2026-11-23T08:00:00Z' }));
  });
});
