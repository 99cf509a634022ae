/**
 * Upstream record types and their tolerant mapping (CONTRACT.md section 4: shift and
 * location records). Unknown fields are ignored, a missing optional field becomes
 * null, and a record of the wrong shape is reported for that item alone.
 */

export interface LocationRecord {
  readonly id: string;
  readonly name: string;
}

export interface ShiftRecord {
  readonly id: string;
  readonly start: string | null;
  readonly end: string | null;
  /** Location id; the upstream sends an id or an object with an `id`. */
  readonly locationId: string | null;
  readonly userId: string | null;
}

/** A user known only by id: another subgraph resolves the rest. */
export interface UserReference {
  readonly id: string;
}

/** One item of a list page that did not have the documented shape. */
export interface MalformedRecord {
  readonly malformed: true;
  readonly reason: string;
}

export type ListName = 'locations' | 'shifts';

export interface RecordOf {
  locations: LocationRecord;
  shifts: ShiftRecord;
}

export function isMalformed(item: unknown): item is MalformedRecord {
  return typeof item === 'object' && item !== null && (item as MalformedRecord).malformed === true;
}

function idOf(value: unknown): string | null {
  if (typeof value === 'string' && value.length > 0) return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

function optionalString(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

function asObject(item: unknown): Record<string, unknown> | null {
  return typeof item === 'object' && item !== null && !Array.isArray(item)
    ? (item as Record<string, unknown>)
    : null;
}

export function toLocationRecord(item: unknown): LocationRecord | MalformedRecord {
  const raw = asObject(item);
  if (!raw) return { malformed: true, reason: 'location item is not an object' };
  if (raw.object !== undefined && raw.object !== 'location') {
    return { malformed: true, reason: `expected object "location", got ${JSON.stringify(raw.object)}` };
  }
  const id = idOf(raw.id);
  if (!id) return { malformed: true, reason: 'location without an id' };
  if (typeof raw.name !== 'string') return { malformed: true, reason: `location ${id} without a name` };
  return { id, name: raw.name };
}

export function toShiftRecord(item: unknown): ShiftRecord | MalformedRecord {
  const raw = asObject(item);
  if (!raw) return { malformed: true, reason: 'shift item is not an object' };
  if (raw.object !== undefined && raw.object !== 'shift') {
    return { malformed: true, reason: `expected object "shift", got ${JSON.stringify(raw.object)}` };
  }
  const id = idOf(raw.id);
  if (!id) return { malformed: true, reason: 'shift without an id' };
  const location = asObject(raw.location);
  return {
    id,
    start: optionalString(raw.start),
    end: optionalString(raw.end),
    locationId: location ? idOf(location.id) : idOf(raw.location),
    userId: asObject(raw.user) ? idOf(asObject(raw.user)!.id) : idOf(raw.user),
  };
}

const ISO_DATE_TIME = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2})(:\d{2}(?:\.\d{1,9})?)?\s*([Zz]|[+-]\d{2}(?::?\d{2})?)$/;

/**
 * An upstream date-time in the RFC 3339 form our `DateTime` scalar serves, keeping
 * its offset: `2026-11-23 09:00+0100` becomes `2026-11-23T09:00:00+01:00`. Null when
 * it is not an ISO 8601 date-time with an offset (a time without an offset names no instant).
 */
export function normalizeDateTime(value: string): string | null {
  const match = ISO_DATE_TIME.exec(value.trim());
  if (!match) return null;
  const [, date, hoursMinutes, seconds = ':00', zone] = match as unknown as [string, string, string, string | undefined, string];
  let offset = zone.toUpperCase();
  if (offset !== 'Z') offset = offset.length === 3 ? `${offset}:00` : offset.includes(':') ? offset : `${offset.slice(0, 3)}:${offset.slice(3)}`;
  const normalized = `${date}T${hoursMinutes}${seconds}${offset}`;
  return Number.isNaN(Date.parse(normalized)) ? null : normalized;
}

export const recordMappers: { [L in ListName]: (item: unknown) => RecordOf[L] | MalformedRecord } = {
  locations: toLocationRecord,
  shifts: toShiftRecord,
};
