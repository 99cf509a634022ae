import { readdirSync } from 'node:fs';
import type { Resolvers } from '../../__generated__/resolvers-types';
import { mergeTypeModules, type TypeResolverModule } from './merge';

/** A resolver file: one per GraphQL type, named after it (`Location.ts`). */
export const TYPE_RESOLVER_FILE = /^[A-Z]\w*\.(ts|js)$/;

/**
 * The hand-written resolvers: one file per GraphQL type (`Location.ts`, `Shift.ts`,
 * `DateTime.ts`), each exporting resolvers named after the types it serves and holding
 * only what the registry cannot build (scalars, each type's fields and relations). Every
 * such file in this folder is merged here, so a new resource's resolver file needs no
 * edit elsewhere; the rest is built from the registry (`../resourceResolvers.ts`).
 *
 * The production bundle cannot list a folder at run time: `scripts/bundle/build.mjs` replaces
 * this module with static imports of the same files, listed when it builds.
 */
function loadTypeResolvers(): Resolvers {
  const files = readdirSync(__dirname).filter((file) => TYPE_RESOLVER_FILE.test(file) && !file.endsWith('.d.ts'));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return mergeTypeModules(files.map((file) => require(`./${file.replace(/\.(ts|js)$/, '')}`) as TypeResolverModule));
}

export const resolvers: Resolvers = loadTypeResolvers();
