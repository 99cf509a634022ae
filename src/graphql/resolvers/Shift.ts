import type { ShiftConnectionResolvers, ShiftResolvers } from '../../__generated__/resolvers-types';
import { UpstreamError } from '../../upstream/errors';
import { nodeIdOf } from '../node';
import { normalizeDateTime, type ShiftRecord } from '../../upstream/records';

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

export const Shift: ShiftResolvers = {
  __resolveReference: async ({ id }, context) => (await context.tenant()).shifts.load(String(id)),
  nodeId: nodeIdOf('Shift'),
  start: (shift) => dateTime(shift, 'start'),
  end: (shift) => dateTime(shift, 'end'),
  location: async (shift, _args, context) => (shift.locationId ? (await context.tenant()).locations.load(shift.locationId) : null),
  user: (shift) => (shift.userId ? { id: shift.userId } : null),
};

export const ShiftConnection: ShiftConnectionResolvers = {
  nodes: (connection) => connection.edges.map((edge) => edge.node),
};
