import type { ShiftResolvers } from '../../__generated__/resolvers-types';
import { UpstreamError } from '../../upstream/errors';
import { locations, normalizeDateTime, type ShiftRecord } from '../../upstream/resources';
import { loadEntity } from './resourceResolvers';

/** A date-time the upstream sent in a form we cannot serve fails that field alone. */
function dateTime(shift: ShiftRecord, field: 'start' | 'end'): string | null {
  const raw = shift[field];
  if (raw === null) return null;
  const normalized = normalizeDateTime(raw);
  if (normalized === null) {
    throw new UpstreamError('UPSTREAM_BAD_RESPONSE', `shift ${shift.id} has a ${field} that is not an ISO 8601 date-time with an offset`);
  }
  return normalized;
}

/** Shift's fields and relations; its connection, lookup and `__resolveReference` come from the registry. */
export const Shift: ShiftResolvers = {
  start: (shift) => dateTime(shift, 'start'),
  end: (shift) => dateTime(shift, 'end'),
  location: (shift, _args, context) => (shift.locationId ? loadEntity(context, locations, shift.locationId) : null),
  user: (shift) => (shift.userId ? { id: shift.userId } : null),
};
