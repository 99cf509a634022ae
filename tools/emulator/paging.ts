import { createHmac, timingSafeEqual } from 'node:crypto';
import type { PageReferenceFormat } from './types';

/** A page to serve: records [offset, offset + pageSize). */
export interface PageRequest {
  offset: number;
  pageSize: number;
}

/** What a cursor is bound to: a cursor of another list or tenant is refused. */
export interface CursorScope {
  list: string;
  tenantId: string;
  key: Buffer;
}

interface CursorPayload {
  l: string;
  t: string;
  o: number;
  s: number;
}

function sign(payload: string, key: Buffer): Buffer {
  return createHmac('sha256', key).update(payload).digest().subarray(0, 12);
}

/**
 * Paging is by offset, but the cursor is opaque on purpose: a signed base64url blob,
 * never a bare number, so a client that computes cursors itself breaks in tests
 * instead of in production against the real upstream.
 */
export function encodeCursor(page: PageRequest, scope: CursorScope): string {
  const payload: CursorPayload = { l: scope.list, t: scope.tenantId, o: page.offset, s: page.pageSize };
  const encoded = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${encoded}.${sign(encoded, scope.key).toString('base64url')}`;
}

function decodeCursor(cursor: string, scope: CursorScope): CursorPayload | undefined {
  const match = /^([A-Za-z0-9_-]{1,512})\.([A-Za-z0-9_-]{16})$/.exec(cursor);
  if (!match) return undefined;
  const signature = Buffer.from(match[2]!, 'base64url');
  const expected = sign(match[1]!, scope.key);
  if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) return undefined;
  let payload: Partial<CursorPayload>;
  try {
    payload = JSON.parse(Buffer.from(match[1]!, 'base64url').toString('utf8')) as Partial<CursorPayload>;
  } catch {
    return undefined;
  }
  if (payload.l !== scope.list || payload.t !== scope.tenantId) return undefined;
  if (!Number.isSafeInteger(payload.o) || payload.o! < 0 || !Number.isSafeInteger(payload.s) || payload.s! < 1) return undefined;
  return payload as CursorPayload;
}

/**
 * Reads `page_size` and `cursor`. The page size of a followed reference is the query's
 * if present, else the cursor's. Returns an error message for a 400 instead of a page.
 */
export function parsePageRequest(
  query: URLSearchParams,
  scope: CursorScope,
  limits: { maxPageSize: number; defaultPageSize: number },
): PageRequest | string {
  for (const name of ['page_size', 'cursor']) {
    if (query.getAll(name).length > 1) return `${name} is repeated`;
  }
  const rawSize = query.get('page_size');
  let querySize: number | undefined;
  if (rawSize !== null) {
    if (!/^[0-9]+$/.test(rawSize) || Number(rawSize) < 1) return 'page_size must be a positive integer';
    querySize = Math.min(Number(rawSize), limits.maxPageSize);
  }
  const rawCursor = query.get('cursor');
  if (rawCursor === null) return { offset: 0, pageSize: querySize ?? limits.defaultPageSize };
  const cursor = decodeCursor(rawCursor, scope);
  if (!cursor) return 'invalid cursor';
  return { offset: cursor.o, pageSize: querySize ?? Math.min(cursor.s, limits.maxPageSize) };
}

/** Where references point and how they are written. */
export interface ReferenceStyle {
  format: PageReferenceFormat;
  origin: string;
  path: string;
}

function reference(page: PageRequest, scope: CursorScope, style: ReferenceStyle): string {
  const cursor = encodeCursor(page, scope);
  if (style.format === 'token') return cursor;
  const relative = `${style.path}?cursor=${encodeURIComponent(cursor)}&page_size=${page.pageSize}`;
  return style.format === 'absolute' ? `${style.origin}${relative}` : relative;
}

/** The list envelope of one page. */
export function buildEnvelope<T>(items: readonly T[], page: PageRequest, scope: CursorScope, style: ReferenceStyle): Record<string, unknown> {
  const end = page.offset + page.pageSize;
  const next = end < items.length ? reference({ offset: end, pageSize: page.pageSize }, scope, style) : null;
  const previous = page.offset > 0 ? reference({ offset: Math.max(0, page.offset - page.pageSize), pageSize: page.pageSize }, scope, style) : null;
  return { object: 'list', data: items.slice(page.offset, end), has_more: next !== null, next, previous };
}
