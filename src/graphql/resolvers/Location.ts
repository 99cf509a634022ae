import type { LocationConnectionResolvers, LocationResolvers } from '../../__generated__/resolvers-types';
import { nodeIdOf } from '../node';

export const Location: LocationResolvers = {
  nodeId: nodeIdOf('Location'),
  // The router batches references; the DataLoader turns them into one index lookup.
  __resolveReference: async ({ id }, context) => (await context.tenant()).locations.load(String(id)),
};

export const LocationConnection: LocationConnectionResolvers = {
  nodes: (connection) => connection.edges.map((edge) => edge.node),
};
