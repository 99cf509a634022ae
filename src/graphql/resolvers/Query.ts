import type { QueryResolvers } from '../../__generated__/resolvers-types';

export const Query: QueryResolvers = {
  locations: async (_parent, args, context) => (await context.tenant()).connection('locations', args),
  shifts: async (_parent, args, context) => (await context.tenant()).connection('shifts', args),
  location: async (_parent, { id }, context) => (await context.tenant()).locations.load(id),
  shift: async (_parent, { id }, context) => (await context.tenant()).shifts.load(id),
};
