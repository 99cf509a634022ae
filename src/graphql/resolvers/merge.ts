import type { Resolvers } from '../../__generated__/resolvers-types';

/** The exports of one `<Type>.ts` resolver file: resolvers named after the types they serve. */
export type TypeResolverModule = Record<string, unknown>;

/** Every export named like a GraphQL type (capitalised), from every file, in one resolver map. */
export function mergeTypeModules(modules: readonly TypeResolverModule[]): Resolvers {
  const merged: Record<string, unknown> = {};
  for (const exports of modules) {
    for (const [type, resolvers] of Object.entries(exports)) {
      if (/^[A-Z]/.test(type)) merged[type] = resolvers;
    }
  }
  return merged as Resolvers;
}
