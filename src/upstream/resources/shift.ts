import { instantOf, optionalString, recordWithId, referenceId } from './fields';
import { defineResource, isMalformed, type MalformedRecord } from './resource';

export interface ShiftRecord {
  readonly id: string;
  readonly start: string | null;
  readonly end: string | null;
  /** Location id; the upstream sends an id or an object with an `id`. */
  readonly locationId: string | null;
  readonly userId: string | null;
}

/**
 * `ShiftFilter` (docs/upstream.md, "How REST maps onto GraphQL"), checked: instants in epoch ms. `startsFrom`
 * is inclusive, `startsBefore` exclusive.
 */
export interface ShiftFilter {
  readonly [key: string]: string | number | undefined;
  readonly locationId?: string;
  readonly startsFrom?: number;
  readonly startsBefore?: number;
}

function toShiftRecord(item: unknown): ShiftRecord | MalformedRecord {
  const record = recordWithId(item, 'shift');
  if (isMalformed(record)) return record;
  const { raw, id } = record;
  return {
    id,
    start: optionalString(raw.start),
    end: optionalString(raw.end),
    locationId: referenceId(raw.location),
    userId: referenceId(raw.user),
  };
}

function matches(shift: ShiftRecord, filter: ShiftFilter): boolean {
  if (filter.locationId !== undefined && shift.locationId !== filter.locationId) return false;
  if (filter.startsFrom === undefined && filter.startsBefore === undefined) return true;
  // A shift whose start is missing or unreadable is in no time window.
  const start = instantOf(shift.start);
  if (start === null) return false;
  if (filter.startsFrom !== undefined && start < filter.startsFrom) return false;
  if (filter.startsBefore !== undefined && start >= filter.startsBefore) return false;
  return true;
}

function filterFrom(input: Readonly<Record<string, unknown>>): ShiftFilter {
  const instant = (name: string): number | undefined => {
    const value = input[name];
    if (value === undefined || value === null) return undefined;
    const at = typeof value === 'string' ? instantOf(value) : null;
    // The DateTime scalar checked it already; this is the REST side's own guard.
    if (at === null) throw new RangeError(`${name} is not a date-time with an offset`);
    return at;
  };
  const location = input.locationId;
  return {
    ...(location !== undefined && location !== null && { locationId: String(location) }),
    ...(instant('startsFrom') !== undefined && { startsFrom: instant('startsFrom') }),
    ...(instant('startsBefore') !== undefined && { startsBefore: instant('startsBefore') }),
  };
}

/**
 * Shifts (docs/upstream.md, "List endpoints"; shape assumed in "Record shapes"). The
 * documentation shows no query parameters for the list, so the filter is applied
 * while scanning; the day it documents one, `upstreamQuery` is where it goes.
 */
export const shifts = defineResource<ShiftRecord, ShiftFilter, 'shifts'>({
  name: 'shifts',
  typename: 'Shift',
  path: '/api/public/v1/shifts/',
  scope: 'shifts.read',
  map: toShiftRecord,
  matches,
  // What `matches` compares, for the live hub's index of subscribers' filters.
  filterShape: { equal: { locationId: { of: (shift) => shift.locationId } }, range: { from: 'startsFrom', before: 'startsBefore', of: (shift) => instantOf(shift.start) } },
  filterFrom,
  upstreamQuery: () => undefined,
});
