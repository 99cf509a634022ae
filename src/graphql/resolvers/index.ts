import type { Resolvers } from '../../__generated__/resolvers-types';
import { DateTime } from './DateTime';
import { Location, LocationConnection } from './Location';
import { Query } from './Query';
import { Shift, ShiftConnection } from './Shift';

export const resolvers: Resolvers = { DateTime, Query, Location, LocationConnection, Shift, ShiftConnection };
