import { readdirSync } from 'node:fs';
import type { Resolvers } from '../../__generated__/resolvers-types';

/**
 * The hand-written resolvers: one file per GraphQL type (`Location.ts`, `Shift.ts`,
 * `DateTime.ts`), each exporting resolvers named after the types it serves and holding
 * only what the registry cannot build (scalars, each type's fields and relations). Every
 * such file in this folder is merged here, so a new resource's resolver file needs no
 * edit elsewhere; the rest is built from the registry (`../resourceResolvers.ts`).
 */
function loadTypeResolvers(): Resolvers {
  const merged: Record<string, unknown> = {};
  const files = readdirSync(__dirname).filter((file) => /^[A-Z]\w*\.(ts|js)$/.test(file) && !file.endsWith('.d.ts'));
  for (const file of files) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const exports = require(`./${file.replace(/\.(ts|js)$/, '')}`) as Record<string, unknown>;
    for (const [type, resolvers] of Object.entries(exports)) {
      if (/^[A-Z]/.test(type)) merged[type] = resolvers;
    }
  }
  return merged as Resolvers;
}

export const resolvers: Resolvers = loadTypeResolvers();
