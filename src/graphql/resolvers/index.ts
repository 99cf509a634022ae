import type { Resolvers } from '../../__generated__/resolvers-types';
import * as DateTime from './DateTime';
import * as Location from './Location';
import * as Shift from './Shift';
import { mergeTypeModules } from './merge';

/**
 * The hand-written resolvers: one file per GraphQL type, each exporting resolvers named
 * after the types it serves and holding only what the registry cannot build (scalars,
 * each type's fields and relations); the rest is built from the registry
 * (`resourceResolvers.ts`). A new file is imported here and added to the list: the
 * files are merged field by field, and a field two files define stops the start.
 */
export const resolvers: Resolvers = mergeTypeModules({ DateTime, Location, Shift });
