import { GraphQLScalarType, Kind } from 'graphql';
import { isRfc3339DateTime } from '../../upstream/resources';

/**
 * RFC 3339 date-time with a mandatory offset. Written here rather than taken from a
 * scalar library because those re-serialise every value to UTC, and a shift that
 * starts at 09:00+01:00 should still read 09:00 in its own time zone. The date-time
 * rule (impossible dates refused) is the one the resource mappers use.
 */
function check(value: unknown): string {
  if (!isRfc3339DateTime(value)) {
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
