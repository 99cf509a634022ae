import type { ShiftConnectionResolvers, ShiftResolvers } from '../../__generated__/resolvers-types';

export const Shift: ShiftResolvers = {
  __resolveReference: async ({ id }, context) => (await context.tenant()).shifts.load(id),
  start: (shift) => shift.start,
  end: (shift) => shift.end,
  location: async (shift, _args, context) => (shift.locationId ? (await context.tenant()).locations.load(shift.locationId) : null),
  user: (shift) => (shift.userId ? { id: shift.userId } : null),
};

export const ShiftConnection: ShiftConnectionResolvers = {
  nodes: (connection) => connection.edges.map((edge) => edge.node),
};
