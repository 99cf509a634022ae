import type { LocationResolvers } from '../../__generated__/resolvers-types';
import { shifts } from '../../upstream/resources';
import { childConnection } from './resourceResolvers';

/** Location's relations; its connection, lookup and `__resolveReference` come from the registry. */
export const Location: LocationResolvers = {
  shifts: childConnection(shifts, 'Location', 'locationId'),
};
