import { buildRoster, localIso, shortHash, type ShiftPattern } from './schedule';
import type { EmulatorLocation, EmulatorShift, EmulatorTenant } from './types';

// Three weeks of shifts from Monday 23 November 2026.
const ROSTER_DAYS = 21;

function locations(prefix: string, company: string, sites: ReadonlyArray<readonly [site: string, address: string]>, timezone: string): EmulatorLocation[] {
  return sites.map(([site, address], index) => ({
    object: 'location',
    id: `loc_${prefix}_${String(index + 1).padStart(3, '0')}`,
    name: `${company} — ${site}`,
    address,
    timezone,
  }));
}

function harbourLaneCoffee(): EmulatorTenant {
  const sites = [
    ['Lambton Quay', '112 Lambton Quay, Wellington 6011'],
    ['Queens Wharf', '3 Queens Wharf, Wellington 6011'],
    ['Cuba Street', '201 Cuba Street, Te Aro, Wellington 6011'],
    ['Oriental Bay', '22 Oriental Parade, Oriental Bay, Wellington 6011'],
    ['Courtenay Place', '58 Courtenay Place, Te Aro, Wellington 6011'],
    ['Thorndon', '317 Tinakori Road, Thorndon, Wellington 6011'],
    ['Petone Foreshore', '9 The Esplanade, Petone, Lower Hutt 5012'],
  ] as const;
  const cafe: ShiftPattern[] = [
    { from: '06:00', to: '12:30', role: 'barista' },
    { from: '07:30', to: '15:30', role: 'shift lead', days: 'weekdays' },
    { from: '11:00', to: '17:00', role: 'kitchen hand' },
  ];
  const locs = locations('hlc', 'Harbour Lane Coffee', sites, 'Pacific/Auckland');
  return {
    tenantId: '7c1e9a42-5b3d-4f8e-9a61-2d4b8c0e1f35',
    name: 'Harbour Lane Coffee',
    clientId: 'harbour-lane-coffee-demo',
    clientSecret: 'demo-secret-hlc-4f9a2c7e1b8d',
    grantedScopes: ['locations.read', 'shifts.read'],
    shard: 0,
    locations: locs,
    shifts: buildRoster({ prefix: 'hlc', locations: locs, patterns: () => cafe, days: ROSTER_DAYS, offset: '+13:00', staffPerLocation: 6, openShare: 0.08 }),
  };
}

function northfieldCareHomes(): EmulatorTenant {
  const homes = [
    ['Oakwood House', '14 Oakwood Lane, Roundhay, Leeds LS8 2JD'],
    ['Beechgrove Court', '3 Beechgrove Terrace, Headingley, Leeds LS6 3AP'],
    ['Millbeck Lodge', '88 Millbeck Road, Ilkley LS29 9EQ'],
    ['Aire View', '21 Riverside Walk, Kirkstall, Leeds LS5 3BN'],
  ] as const;
  const wards = ['Bluebell Ward', 'Heather Ward', 'Willow Ward'];
  const sites = homes.flatMap(([home, address]) => wards.map((ward) => [`${home}, ${ward}`, address] as const));
  const locs = locations('nch', 'Northfield Care Homes', sites, 'Europe/London');
  const ward: ShiftPattern[] = [
    { from: '07:00', to: '15:00', role: 'care assistant' },
    { from: '08:00', to: '20:00', role: 'registered nurse', days: 'weekdays' },
    { from: '14:30', to: '22:30', role: 'senior carer' },
    { from: '22:00', to: '07:30', role: 'night care assistant' },
  ];
  return {
    tenantId: 'e4b07d16-93a2-4c5f-8b1e-6f2a9d3c7b40',
    name: 'Northfield Care Homes',
    clientId: 'northfield-care-demo',
    clientSecret: 'demo-secret-nch-8e3b5d1a7c2f',
    grantedScopes: ['locations.read', 'shifts.read', 'timesheets.read'],
    shard: 1,
    locations: locs,
    shifts: buildRoster({ prefix: 'nch', locations: locs, patterns: () => ward, days: ROSTER_DAYS, offset: '+00:00', staffPerLocation: 9, openShare: 0.06 }),
  };
}

// Granted no `shifts.read`: its shifts exist, but listing them is FORBIDDEN (demo of the error).
function alpenrose(): EmulatorTenant {
  const sites = [
    ['Altstadt', 'Herzog-Friedrich-Straße 12, 6020 Innsbruck'],
    ['Wilten', 'Leopoldstraße 31, 6020 Innsbruck'],
    ['Hall in Tirol', 'Oberer Stadtplatz 5, 6060 Hall in Tirol'],
  ] as const;
  const bakery: ShiftPattern[] = [
    { from: '04:00', to: '11:00', role: 'baker' },
    { from: '06:30', to: '13:30', role: 'sales assistant' },
    { from: '12:00', to: '18:30', role: 'sales assistant', days: 'weekdays' },
  ];
  const locs = locations('abk', 'Alpenrose Bäckerei', sites, 'Europe/Vienna');
  return {
    tenantId: '2a9f4c68-0d17-4b3e-a5c2-91e8f6b0d4a7',
    name: 'Alpenrose Bäckerei',
    clientId: 'alpenrose-baeckerei-demo',
    clientSecret: 'demo-secret-abk-1d6f3a9b4e2c',
    grantedScopes: ['locations.read', 'timesheets.read'],
    shard: 0,
    locations: locs,
    shifts: buildRoster({ prefix: 'abk', locations: locs, patterns: () => bakery, days: 14, offset: '+01:00', staffPerLocation: 5, openShare: 0.05 }),
  };
}

/** The towns of Maple Ridge Grocers' stores, in Ontario (Eastern time, -05:00 all of the seeded weeks). */
const ONTARIO_TOWNS = [
  'Barrie', 'Belleville', 'Brampton', 'Brantford', 'Burlington', 'Cambridge', 'Guelph', 'Hamilton', 'Kingston', 'Kitchener',
  'London', 'Markham', 'Milton', 'Mississauga', 'Niagara Falls', 'North Bay', 'Oakville', 'Orillia', 'Oshawa', 'Ottawa',
  'Peterborough', 'Sarnia', 'Sault Ste. Marie', 'St. Catharines', 'Sudbury', 'Thunder Bay', 'Timmins', 'Toronto', 'Waterloo', 'Windsor',
] as const;

/**
 * A grocery chain big enough to page at the documented sizes: 130 locations (the
 * location picker's `first: 100` has a second page) and, at its distribution centre
 * (the first location), more than 50 shifts a week (the README's `Week` query at
 * `first: 50` has a second page too); 1,932 shifts over two weeks in all.
 */
function mapleRidgeGrocers(): EmulatorTenant {
  const stores = Array.from({ length: 129 }, (_, index) => {
    const town = ONTARIO_TOWNS[index % ONTARIO_TOWNS.length]!;
    const number = String(index + 101);
    return [`Store ${number}, ${town}`, `${200 + index * 3} Main Street, ${town}, ON`] as const;
  });
  const sites = [['Distribution Centre, Mississauga', '6000 Dixie Road, Mississauga, ON L5T 1A6'] as const, ...stores];
  const depot: ShiftPattern[] = ['05:00', '06:00', '07:00', '13:00', '14:00', '15:00', '21:00', '22:00', '23:00'].map((from, slot) => ({
    from,
    to: `${String((Number(from.slice(0, 2)) + 8) % 24).padStart(2, '0')}:00`,
    role: slot % 3 === 2 ? 'forklift operator' : 'warehouse associate',
  }));
  const store: ShiftPattern[] = [{ from: '08:00', to: '16:00', role: 'store associate' }];
  const locs = locations('mrg', 'Maple Ridge Grocers', sites, 'America/Toronto');
  return {
    tenantId: '5d8b2e71-c4a9-4f06-b3d5-7e1f9a2c6b84',
    name: 'Maple Ridge Grocers',
    clientId: 'maple-ridge-grocers-demo',
    clientSecret: 'demo-secret-mrg-6c2e9f4a7d1b',
    grantedScopes: ['locations.read', 'shifts.read'],
    shard: 1,
    locations: locs,
    shifts: buildRoster({ prefix: 'mrg', locations: locs, patterns: (_location, index) => (index === 0 ? depot : store), days: 14, offset: '-05:00', staffPerLocation: 4, openShare: 0.04 }),
  };
}

/**
 * The seeded demo companies (fixed ids and demo-only credentials), spread over two
 * shards; one of them is not granted `shifts.read`, and one is large enough to page
 * (more than 100 locations). Fresh objects on every call.
 */
export function demoTenants(): EmulatorTenant[] {
  return [harbourLaneCoffee(), northfieldCareHomes(), alpenrose(), mapleRidgeGrocers()];
}

const GENERATED_SHIFTS: ReadonlyArray<{ from: number; length: number; role: string }> = [
  { from: 6 * 60, length: 8 * 60, role: 'morning' },
  { from: 14 * 60, length: 8 * 60, role: 'afternoon' },
  { from: 22 * 60, length: 8 * 60, role: 'night' },
];

/** Builds a tenant with n locations and m shifts, deterministic, for tests. */
export function makeTenant(input: {
  tenantId: string;
  name?: string;
  clientId?: string;
  clientSecret?: string;
  grantedScopes?: string[];
  shard?: number;
  locationCount: number;
  shiftCount: number;
}): EmulatorTenant {
  const { locationCount, shiftCount } = input;
  if (!Number.isInteger(locationCount) || locationCount < 0 || !Number.isInteger(shiftCount) || shiftCount < 0) {
    throw new RangeError('makeTenant: locationCount and shiftCount must be non-negative integers');
  }
  if (shiftCount > 0 && locationCount === 0) throw new RangeError('makeTenant: shifts need at least one location');
  // From the tenant id, so two generated tenants never share record ids.
  const prefix = shortHash(input.tenantId, 6);
  const name = input.name ?? `Company ${prefix}`;
  const locs: EmulatorLocation[] = Array.from({ length: locationCount }, (_, index) => ({
    object: 'location',
    id: `loc_${prefix}_${String(index + 1).padStart(3, '0')}`,
    name: `${name} — Site ${index + 1}`,
    timezone: 'Europe/Amsterdam',
  }));
  // Shift i goes to location i mod n; each location's shifts run morning, afternoon,
  // night, next day, ... so the list is sorted by start.
  const shifts: EmulatorShift[] = Array.from({ length: shiftCount }, (_, index) => {
    const slot = Math.floor(index / locationCount);
    const kind = GENERATED_SHIFTS[slot % GENERATED_SHIFTS.length]!;
    const day = Math.floor(slot / GENERATED_SHIFTS.length);
    return {
      object: 'shift',
      id: `shf_${prefix}_${String(index + 1).padStart(4, '0')}`,
      location: locs[index % locationCount]!.id,
      start: localIso(day, kind.from, '+01:00'),
      end: localIso(day, kind.from + kind.length, '+01:00'),
      user: index % 9 === 4 ? null : `usr_${prefix}_${String((index * 7) % 25 + 1).padStart(3, '0')}`,
      role: kind.role,
      break_minutes: 30,
    };
  });
  return {
    tenantId: input.tenantId,
    name,
    clientId: input.clientId ?? `client-${prefix}`,
    clientSecret: input.clientSecret ?? `secret-${shortHash(`secret:${input.tenantId}`, 16)}`,
    grantedScopes: input.grantedScopes ?? ['locations.read', 'shifts.read'],
    shard: input.shard ?? 0,
    locations: locs,
    shifts,
  };
}

/**
 * `count` generated companies of one size, spread over `shards` shards: the fixed ids
 * (`c0c0a000-0000-4000-8000-000000000001`, …) and credentials are derived from the
 * index, so two runs generate the same companies (the memory probe, sizing runs).
 */
export function generatedTenants(count: number, size: { locations: number; shifts: number; shards?: number }): EmulatorTenant[] {
  if (!Number.isInteger(count) || count < 1) throw new RangeError('generatedTenants: count must be a positive integer');
  return Array.from({ length: count }, (_, index) =>
    makeTenant({
      tenantId: `c0c0a000-0000-4000-8000-${String(index + 1).padStart(12, '0')}`,
      name: `Generated Company ${index + 1}`,
      // By index: the hash-derived default repeats among thousands of companies (6 hex digits).
      clientId: `client-gen-${index + 1}`,
      shard: index % (size.shards ?? 2),
      locationCount: size.locations,
      shiftCount: size.shifts,
    }),
  );
}
