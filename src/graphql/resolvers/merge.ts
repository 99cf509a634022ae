import type { Resolvers } from '../../__generated__/resolvers-types';

/** The exports of one `<Type>.ts` resolver file: resolvers named after the types they serve. */
export type TypeResolverModule = Readonly<Record<string, unknown>>;

const isFieldMap = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;

/**
 * The one resolver merger. Every export named like a GraphQL type (capitalised) of every
 * resolver file, by file name, in one resolver map, merged field by field: `Location.ts`
 * gives `Location.shifts` and `Timesheet.ts` may add `Location.timesheets` beside it. A
 * field (or a scalar) that two files define would silently lose one of them, so it
 * throws, naming both files: the server then refuses to start. `folder` is where the
 * file names are read from: the schema (graphql/server/schema.ts) merges the resolvers
 * built from the registry, the live ones, the `Node` ones and these files the same way.
 */
export function mergeTypeModules(files: Readonly<Record<string, TypeResolverModule>>, folder = 'src/graphql/resolvers/'): Resolvers {
  const merged: Record<string, unknown> = {};
  // Which file first gave each type, and each field (`Location.shifts`).
  const givenBy = new Map<string, string>();
  const claim = (name: string, file: string) => {
    const earlier = givenBy.get(name);
    if (earlier !== undefined) throw new Error(`resolvers: ${name} is defined in both ${earlier}.ts and ${file}.ts (${folder}); keep one`);
    givenBy.set(name, file);
  };
  for (const [file, exports] of Object.entries(files)) {
    for (const [type, resolvers] of Object.entries(exports)) {
      if (!/^[A-Z]/.test(type)) continue;
      const existing = merged[type];
      if (!isFieldMap(resolvers) || (existing !== undefined && !isFieldMap(existing))) {
        claim(type, file);
        merged[type] = resolvers;
        continue;
      }
      if (!givenBy.has(type)) givenBy.set(type, file);
      for (const field of Object.keys(resolvers)) claim(`${type}.${field}`, file);
      merged[type] = { ...(existing as Record<string, unknown> | undefined), ...resolvers };
    }
  }
  return merged as Resolvers;
}
