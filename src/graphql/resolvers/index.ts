import type { Resolvers } from '../../__generated__/resolvers-types';
import { DateTime } from './DateTime';
import { Location } from './Location';
import { Shift } from './Shift';

/** The hand-written resolvers: scalars and each type's relations. The rest is built from the registry (`../resourceResolvers`). */
export const resolvers: Resolvers = { DateTime, Location, Shift };
