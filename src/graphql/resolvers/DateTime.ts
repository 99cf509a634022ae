import { GraphQLScalarType, Kind } from 'graphql';

/**
 * RFC 3339 date-time with a mandatory offset. Written here rather than taken from
 * graphql-scalars because that one re-serialises every value to UTC, and a shift
 * that starts at 09:00+01:00 should still read 09:00 in its own time zone.
 */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

function check(value: unknown): string {
  if (typeof value !== 'string' || !RFC3339.test(value) || Number.isNaN(Date.parse(value))) {
    throw new TypeError(`DateTime must be an RFC 3339 date-time with an offset, got ${JSON.stringify(value)?.slice(0, 40)}`);
  }
  return value;
}

export const DateTime = new GraphQLScalarType<string, string>({
  name: 'DateTime',
  description: 'An RFC 3339 date-time with its UTC offset, e.g. 2026-11-23T09:00:00+01:00.',
  serialize: check,
  parseValue: check,
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING) throw new TypeError('DateTime must be a string');
    return check(ast.value);
  },
});
