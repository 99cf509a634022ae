/**
 * What a frontend does with the typed operations in operations/__generated__: a tiny
 * typed request helper and three screens' worth of data loading. Nothing here is
 * imported by the server; test/unit/typed-operations.test.ts compiles this file, so a
 * schema or operation change that breaks a frontend breaks our build first.
 */
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql';
import {
  LocationPickerDocument,
  ShiftsPageDocument,
  WeekRotaDocument,
  type LocationPickerQuery,
  type ShiftsPageQuery,
  type WeekRotaQuery,
} from '../../operations/__generated__/graphql';

/** One entry of a GraphQL response's `errors`, with our `extensions.code`. */
export interface ResponseError {
  message: string;
  path?: readonly (string | number)[];
  extensions?: { code?: string };
}

/**
 * A response as the server sends it: root fields are nullable, so a failing field
 * (say `shifts` without the `shifts.read` scope) is null with an error beside it
 * while the rest of `data` is still there.
 */
export interface Result<TData> {
  data: TData | null;
  errors: ResponseError[];
}

export type Request = <TData, TVariables>(
  document: TypedDocumentNode<TData, TVariables>,
  variables: TVariables,
) => Promise<Result<TData>>;

export interface ClientOptions {
  /** The router's or the subgraph's GraphQL endpoint. */
  url: string;
  /** For example `{ authorization: 'Bearer …' }`, or `{ 'x-tenant-id': … }` on a trusted network. */
  headers?: Record<string, string>;
  fetch?: typeof fetch;
}

export function createRequest(options: ClientOptions): Request {
  const fetchFn = options.fetch ?? fetch;
  return async (document, variables) => {
    const response = await fetchFn(options.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...options.headers },
      body: JSON.stringify({ query: print(document), variables }),
    });
    const body = (await response.json()) as { data?: unknown; errors?: ResponseError[] };
    return { data: (body.data ?? null) as never, errors: body.errors ?? [] };
  };
}

export interface LocationOption {
  id: string;
  label: string;
}

/** Location picker: every location, following pages until the last one. */
export async function loadLocationOptions(request: Request): Promise<LocationOption[]> {
  const options: LocationOption[] = [];
  let after: string | null = null;
  do {
    // Annotated because `after` feeds back into the loop, which defeats inference.
    const result: Result<LocationPickerQuery> = await request(LocationPickerDocument, { after });
    const page = result.data?.locations;
    if (!page) throw new Error(`locations unavailable: ${result.errors.map((error) => error.extensions?.code ?? error.message).join(', ')}`);
    for (const { node: location } of page.edges) options.push({ id: location.id, label: location.name });
    after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
  } while (after);
  return options;
}

export interface RotaRow {
  locationId: string;
  locationName: string;
  shifts: { id: string; start: string; end: string | null; userId: string | null }[];
}

/**
 * A week's rota at one location: the subgraph filters the shifts to those that start
 * in the week; this only pages on while `hasNextPage` says so. Null row when the
 * location does not exist.
 */
export async function loadWeekRota(request: Request, locationId: string, weekStart: Date): Promise<{ row: RotaRow | null; errors: ResponseError[] }> {
  const weekEnd = new Date(weekStart.getTime() + 7 * 24 * 60 * 60 * 1000);
  const errors: ResponseError[] = [];
  let row: RotaRow | null = null;
  let after: string | null = null;
  do {
    const result: Result<WeekRotaQuery> = await request(WeekRotaDocument, { locationId, weekStart: weekStart.toISOString(), weekEnd: weekEnd.toISOString(), first: 100, after });
    errors.push(...result.errors);
    const location = result.data?.location;
    if (!location) break;
    row ??= { locationId: location.id, locationName: location.name, shifts: [] };
    for (const shift of location.shifts?.nodes ?? []) {
      if (shift.start) row.shifts.push({ id: shift.id, start: shift.start, end: shift.end ?? null, userId: shift.user?.id ?? null });
    }
    after = location.shifts?.pageInfo.hasNextPage ? location.shifts.pageInfo.endCursor : null;
  } while (after);
  return { row, errors };
}

export type ShiftEdge = NonNullable<ShiftsPageQuery['shifts']>['edges'][number];

/** Paging through shifts: one page, and the cursor for the next one (null at the end). */
export async function loadShiftsPage(
  request: Request,
  pageSize: number,
  after: string | null,
): Promise<{ edges: ShiftEdge[]; next: string | null }> {
  const { data, errors } = await request(ShiftsPageDocument, { first: pageSize, after });
  const page = data?.shifts;
  if (!page) throw new Error(`shifts unavailable: ${errors.map((error) => error.extensions?.code ?? error.message).join(', ')}`);
  return { edges: page.edges, next: page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null };
}
