import type { QueryResolvers } from '../../__generated__/resolvers-types';
import type { LocationRecord, ShiftRecord } from '../../upstream/records';
import { resolveNode } from '../node';

export const Query: QueryResolvers = {
  locations: async (_parent, args, context) => (await context.tenant()).connection('locations', args),
  shifts: async (_parent, args, context) => (await context.tenant()).connection('shifts', args),
  location: async (_parent, { id }, context) => (await context.tenant()).locations.load(id),
  shift: async (_parent, { id }, context) => (await context.tenant()).shifts.load(id),
  // The request's own tenant loaders, keyed by typename: a node id never reaches another tenant.
  node: async (_parent, { nodeId }, context) => {
    const tenant = await context.tenant();
    return resolveNode<LocationRecord | ShiftRecord>(nodeId, { Location: tenant.locations, Shift: tenant.shifts });
  },
};
