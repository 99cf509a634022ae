import type { GraphQLResolverMap } from '@apollo/subgraph';
import type { EmulatorTenant } from '../../src/emulator';
import type { GraphQLContext } from '../../src/graphql/context';
import { childConnection } from '../../src/graphql/resourceResolvers';
import type { SchemaExtension } from '../../src/graphql/schema';
import { defineResource, isMalformed, locations, recordWithId, referenceId, shifts, type MalformedRecord } from '../../src/upstream/resources';

/**
 * A resource the product does not ship, defined the way a developer adds one (README,
 * "Adding a resource"): a descriptor, a schema block and a relation resolver. The
 * upstream names timesheets and their scope (upstream-api.md 2.1, 5.6) but documents
 * no fields, so this shape is the test's own.
 */
export interface TimesheetRecord {
  readonly id: string;
  readonly minutes: number | null;
  readonly shiftId: string | null;
  readonly locationId: string | null;
}

export type TimesheetFilter = { readonly locationId?: string };

export const timesheets = defineResource<TimesheetRecord, TimesheetFilter>({
  name: 'timesheets',
  typename: 'Timesheet',
  path: '/api/public/v1/timesheets/',
  scope: 'timesheets.read',
  map(item): TimesheetRecord | MalformedRecord {
    const record = recordWithId(item, 'timesheet');
    if (isMalformed(record)) return record;
    const { raw, id } = record;
    return { id, minutes: typeof raw.minutes === 'number' ? raw.minutes : null, shiftId: referenceId(raw.shift), locationId: referenceId(raw.location) };
  },
  matches: (record, filter) => filter.locationId === undefined || record.locationId === filter.locationId,
  filterFrom: (input) => (input.locationId == null ? {} : { locationId: String(input.locationId) }),
});

const typeDefs = /* GraphQL */ `
  extend type Query {
    timesheets(first: Int, after: String, last: Int, before: String): TimesheetConnection
    timesheet(id: ID!): Timesheet
  }
  type Timesheet @key(fields: "id") {
    id: ID!
    minutes: Int
    shift: Shift
    location: Location
  }
  type TimesheetConnection {
    edges: [TimesheetEdge!]!
    nodes: [Timesheet!]!
    pageInfo: PageInfo!
  }
  type TimesheetEdge {
    cursor: String!
    node: Timesheet!
  }
  extend type Location {
    timesheets(first: Int, after: String): TimesheetConnection
  }
`;

const resolvers: GraphQLResolverMap<GraphQLContext> = {
  Timesheet: {
    shift: async (sheet: TimesheetRecord, _args: unknown, context: GraphQLContext) => (sheet.shiftId ? (await context.tenant()).loader(shifts).load(sheet.shiftId) : null),
    location: async (sheet: TimesheetRecord, _args: unknown, context: GraphQLContext) =>
      sheet.locationId ? (await context.tenant()).loader(locations).load(sheet.locationId) : null,
  },
  Location: { timesheets: childConnection(timesheets, 'Location', 'locationId') },
};

export const timesheetExtension: SchemaExtension = { resources: [timesheets], typeDefs, resolvers };

/** Seed data: a timesheet for each of the tenant's first `count` shifts. */
export function withTimesheets(tenant: EmulatorTenant, count: number): EmulatorTenant {
  const sheets = tenant.shifts.slice(0, count).map((shift, index) => ({
    object: 'timesheet',
    id: `ts_${shift.id}`,
    shift: shift.id,
    location: { id: shift.location },
    minutes: 420 + (index % 5) * 15,
  }));
  return { ...tenant, timesheets: sheets };
}
