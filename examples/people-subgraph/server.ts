import { ApolloServer, type ApolloServerOptions, type BaseContext } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { buildSubgraphSchema, type GraphQLResolverMap } from '@apollo/subgraph';
import { GraphQLError, parse } from 'graphql';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { directorySize, headcountOf, managerIdOf, notesOf, personAt, personById, type Person } from './directory';

/**
 * An example "people" subgraph: a small, real @apollo/subgraph server that owns
 * `User`, adds `headcount` and `manager` to our `Location` and `notes` to our
 * `Shift`, and has its own Relay `PageInfo`. It exists so that composition, the
 * router configuration and gateway tests run against the situation every real
 * supergraph has, not our subgraph alone.
 */

type Logger = NonNullable<ApolloServerOptions<BaseContext>['logger']>;

export interface PeopleSubgraphOptions {
  /** TCP port; 0 (the default) picks a free one. */
  port?: number;
  /** Interface to listen on: 127.0.0.1 (the default), or 0.0.0.0 in a container. */
  host?: string;
  /** Apollo Server's logger; the default drops debug and info and writes the rest to stderr. */
  logger?: Logger;
}

export interface RunningPeopleSubgraph {
  /** The GraphQL endpoint, for example `http://127.0.0.1:4002/graphql`. */
  url: string;
  close(): Promise<void>;
}

const maxPageSize = 100;

const quietLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: (message: unknown) => void process.stderr.write(`people subgraph: ${String(message)}\n`),
  error: (message: unknown) => void process.stderr.write(`people subgraph: ${String(message)}\n`),
};

const typeDefs = parse(readFileSync(path.join(__dirname, 'schema.graphql'), 'utf8'));

function badInput(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });
}

function encodeCursor(index: number): string {
  return Buffer.from(`people:${index}`).toString('base64url');
}

function decodeCursor(cursor: string): number {
  const match = /^people:(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString());
  const index = match ? Number(match[1]) : NaN;
  if (!Number.isSafeInteger(index) || index >= directorySize) throw badInput('`after` is not a cursor from `people`');
  return index;
}

function peoplePage(args: { first?: number | null; after?: string | null }) {
  const first = args.first ?? maxPageSize;
  if (!Number.isInteger(first) || first < 1 || first > maxPageSize) {
    throw badInput(`\`first\` must be between 1 and ${maxPageSize}`);
  }
  const start = args.after == null ? 0 : decodeCursor(args.after) + 1;
  const end = Math.min(start + first, directorySize);
  const edges: { cursor: string; node: Person }[] = [];
  for (let index = start; index < end; index += 1) edges.push({ cursor: encodeCursor(index), node: personAt(index) });
  return {
    edges,
    nodes: edges.map((edge) => edge.node),
    pageInfo: {
      hasNextPage: end < directorySize,
      hasPreviousPage: start > 0,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}

const resolvers: GraphQLResolverMap = {
  Query: {
    people: (_parent, args: { first?: number | null; after?: string | null }) => peoplePage(args),
    person: (_parent, args: { id: string }) => personById(args.id),
  },
  User: {
    __resolveReference: (reference: { id: string }) => personById(reference.id),
  },
  Location: {
    __resolveReference: (reference: { id: string }) => ({ id: reference.id }),
    headcount: (location: { id: string }) => headcountOf(location.id),
    manager: (location: { id: string }) => personById(managerIdOf(location.id)),
  },
  Shift: {
    __resolveReference: (reference: { id: string }) => ({ id: reference.id }),
    notes: (shift: { id: string }) => notesOf(shift.id),
  },
};

/** Starts the people subgraph (on 127.0.0.1 unless `host` says otherwise). */
export async function startPeopleSubgraph(options: PeopleSubgraphOptions = {}): Promise<RunningPeopleSubgraph> {
  const server = new ApolloServer({
    schema: buildSubgraphSchema([{ typeDefs, resolvers }]),
    logger: options.logger ?? quietLogger,
  });
  const { url } = await startStandaloneServer(server, { listen: { host: options.host ?? '127.0.0.1', port: options.port ?? 0 } });
  return {
    url: new URL('/graphql', url).toString(),
    close: () => server.stop(),
  };
}
