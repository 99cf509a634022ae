import { GraphQLScalarType } from 'graphql';
import { resolvers } from '../../src/graphql/resolvers';
import { mergeTypeModules } from '../../src/graphql/resolvers/merge';
import { subgraphResolvers } from '../../src/graphql/server/schema';

const field = () => null;

describe('the resolver files, merged field by field', () => {
  it('keeps every field a type gets from several files', () => {
    const merged = mergeTypeModules({
      Location: { Location: { shifts: field } },
      Timesheet: { Timesheet: { location: field }, Location: { timesheets: field } },
    }) as Record<string, Record<string, unknown>>;
    expect(Object.keys(merged.Location!)).toEqual(['shifts', 'timesheets']);
    expect(Object.keys(merged.Timesheet!)).toEqual(['location']);
  });

  it('takes only exports named like a GraphQL type, and a scalar as it is', () => {
    const DateTime = new GraphQLScalarType({ name: 'DateTime' });
    const merged = mergeTypeModules({ DateTime: { DateTime, helper: field } }) as Record<string, unknown>;
    expect(merged).toEqual({ DateTime });
    expect(merged.DateTime).toBe(DateTime);
  });

  it('refuses a field two files define, naming both', () => {
    const merge = () => mergeTypeModules({ Location: { Location: { shifts: field } }, Timesheet: { Location: { shifts: field, timesheets: field } } });
    expect(merge).toThrow('resolvers: Location.shifts is defined in both Location.ts and Timesheet.ts');
  });

  it('refuses a scalar two files define, or a scalar and fields under one name', () => {
    const scalar = new GraphQLScalarType({ name: 'DateTime' });
    expect(() => mergeTypeModules({ DateTime: { DateTime: scalar }, Other: { DateTime: scalar } })).toThrow('DateTime is defined in both DateTime.ts and Other.ts');
    expect(() => mergeTypeModules({ Location: { Location: { shifts: field } }, Other: { Location: scalar } })).toThrow('Location is defined in both Location.ts and Other.ts');
  });

  it('serves the product files: the DateTime scalar, Location and Shift relations', () => {
    const served = resolvers as Record<string, unknown>;
    expect(served.DateTime).toBeInstanceOf(GraphQLScalarType);
    expect(Object.keys(served.Location as object)).toContain('shifts');
    expect(Object.keys(served.Shift as object)).toEqual(expect.arrayContaining(['start', 'end', 'location', 'user']));
  });

  it('merges the schema’s resolvers with the same merger: registry, live, Node and type files', () => {
    const served = subgraphResolvers() as Record<string, Record<string, unknown>>;
    expect(Object.keys(served.Location!)).toEqual(expect.arrayContaining(['__resolveReference', 'shifts']));
    expect(Object.keys(served.Query!)).toEqual(expect.arrayContaining(['node', 'locations', 'shifts']));
    expect(Object.keys(served.Subscription!).length).toBeGreaterThan(0);
  });

  it('refuses a type file that defines a field the registry already builds, naming both', () => {
    // mergeResolvers let the later field win here: a hand-written __resolveReference replaced the registry's silently.
    expect(() => subgraphResolvers({ Location: { __resolveReference: field } })).toThrow(
      'resolvers: Location.__resolveReference is defined in both resolvers/resourceResolvers.ts and resolvers/index.ts (src/graphql/); keep one',
    );
  });
});
