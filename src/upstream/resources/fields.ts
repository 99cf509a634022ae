/**
 * Field helpers every resource mapper shares, written once (docs/upstream.md,
 * "Record shapes"). The upstream documents few record fields, so each helper says
 * what it accepts and answers null for anything else.
 */

import type { MalformedRecord } from './resource';

/** A record as a plain object, or null when it is not one. */
export function asObject(item: unknown): Record<string, unknown> | null {
  return typeof item === 'object' && item !== null && !Array.isArray(item) ? (item as Record<string, unknown>) : null;
}

/** An id: a non-empty string, or a finite number (served as its string). */
export function idOf(value: unknown): string | null {
  if (typeof value === 'string' && value.length > 0) return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

/** "An id or `{ id }`": how the upstream refers to another record (a shift's `location`, its `user`). */
export function referenceId(value: unknown): string | null {
  const object = asObject(value);
  return object ? idOf(object.id) : idOf(value);
}

/**
 * The common start of every mapper: an object whose `object` field, when present, names
 * the expected kind, with an id; else the MalformedRecord saying why not.
 */
export function recordWithId(item: unknown, object: string): { raw: Record<string, unknown>; id: string } | MalformedRecord {
  const raw = asObject(item);
  if (!raw) return { malformed: true, reason: `${object} item is not an object` };
  if (raw.object !== undefined && raw.object !== object) {
    return { malformed: true, reason: `expected object "${object}", got ${JSON.stringify(raw.object)}` };
  }
  const id = idOf(raw.id);
  return id ? { raw, id } : { malformed: true, reason: `${object} without an id` };
}

export function optionalString(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?\s*(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)$/;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/**
 * An ISO 8601 date-time with an offset, in the RFC 3339 form our `DateTime` scalar
 * serves, keeping its offset: `2026-11-23 09:00+0100` becomes
 * `2026-11-23T09:00:00+01:00`. Null when it is not one: a time without an offset names
 * no instant, and impossible dates (`2026-02-30`, `T24:00`) are refused here, since
 * `Date.parse` quietly rolls them over.
 *
 * Memoised: the same records are served request after request (the entity index and
 * the page cache keep them), and every shift's `start` and `end` pass here and again
 * through the `DateTime` scalar (what memoising saved:
 * bench/README.md, "What each step bought").
 */
export function normalizeDateTime(value: string): string | null {
  // The longest date-time is 35 characters; longer is none, and is not remembered (the memo is bounded by count, not size).
  if (value.length > MAX_DATE_TIME_LENGTH) return null;
  let normalized = NORMALIZED.get(value);
  if (normalized === undefined) {
    normalized = normalize(value);
    // Bounded: a cleared cache only costs the checks again.
    if (NORMALIZED.size >= MAX_MEMOISED) NORMALIZED.clear();
    NORMALIZED.set(value, normalized);
  }
  return normalized;
}

/** Date-times remembered by `normalizeDateTime`; a few MB at most (none is longer than MAX_DATE_TIME_LENGTH). */
const MAX_MEMOISED = 20_000;

/** The longest text taken for a date-time: 35 characters at most, plus room for spaces around it. */
export const MAX_DATE_TIME_LENGTH = 128;

/** How many date-times `normalizeDateTime` remembers now (for tests and diagnostics). */
export function memoisedDateTimes(): number {
  return NORMALIZED.size;
}
const NORMALIZED = new Map<string, string | null>();

function normalize(value: string): string | null {
  const match = ISO_DATE_TIME.exec(value.trim());
  if (!match) return null;
  const [, y, mo, d, h, mi, s = '00', fraction = '', zulu, sign, oh, om = '00'] = match as unknown as string[];
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return null;
  if (!zulu && (Number(oh) > 23 || Number(om) > 59)) return null;
  const offset = zulu ? 'Z' : `${sign}${oh}:${om}`;
  return `${y}-${mo}-${d}T${h}:${mi}:${s}${fraction}${offset}`;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

/** Whether a value is already an RFC 3339 date-time with an offset, and a possible one (the `DateTime` scalar's rule). */
export function isRfc3339DateTime(value: unknown): value is string {
  // A value `normalizeDateTime` produced is RFC 3339 already (the common case: what our resolvers serve).
  return typeof value === 'string' && (NORMALIZED.get(value) === value || (RFC3339.test(value) && normalizeDateTime(value) !== null));
}

/** The instant of a date-time in epoch ms, or null when it is not one. */
export function instantOf(value: string | null | undefined): number | null {
  if (!value) return null;
  const normalized = normalizeDateTime(value);
  return normalized === null ? null : Date.parse(normalized);
}
