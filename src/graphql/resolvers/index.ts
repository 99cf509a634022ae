import { readdirSync } from 'node:fs';
import type { Resolvers } from '../../__generated__/resolvers-types';
import { mergeTypeModules, type TypeResolverModule } from './merge';

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
  // `Location.ts` (or `.js` when built); a declaration file (`Location.d.ts`) does not match.
  const files = readdirSync(__dirname).filter((file) => /^[A-Z]\w*\.(ts|js)$/.test(file));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return mergeTypeModules(files.map((file) => require(`./${file.replace(/\.(ts|js)$/, '')}`) as TypeResolverModule));
}

export const resolvers: Resolvers = loadTypeResolvers();
