import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { PageRef } from '../upstream/pageReference';
import type { ListName } from '../upstream/records';
import { badUserInput } from './errors';

/** Where an edge sits upstream: the page it came on and its position there. */
export interface CursorPosition {
  readonly ref: PageRef | null;
  /** The page size the page was fetched with. */
  readonly size: number;
  readonly index: number;
  readonly id: string;
  /** For the last record of an upstream page: that page's `next`, so resuming costs one call, not two. */
  readonly next?: PageRef | null;
}

interface CursorPayload {
  /** tenant */ t: string;
  /** list */ l: ListName;
  /** page reference */ r: PageRef | null;
  /** page size */ s: number;
  /** index in the page */ i: number;
  /** record id */ d: string;
  /** next page, on a page's last record */ n?: PageRef;
}

const SIGNATURE_BYTES = 16;
/** Two page references of up to 2 048 characters each, URL-encoded, then base64: room enough. */
const MAX_CURSOR_LENGTH = 24_576;

/**
 * Opaque connection cursors: the upstream position of an edge, signed with HMAC-SHA256
 * (WFS_CURSOR_SECRET) and bound to one tenant and one list. A cursor we did not
 * issue, issued for another tenant or list, or tampered with, is BAD_USER_INPUT,
 * decided before any upstream call.
 */
export class CursorCodec {
  // A KeyObject made once: HMAC with a raw Buffer key re-imports the key on every call (5x slower).
  private readonly key: KeyObject;

  constructor(secret: Buffer) {
    this.key = createSecretKey(secret);
  }

  encode(tenantId: string, list: ListName, position: CursorPosition): string {
    const payload: CursorPayload = { t: tenantId, l: list, r: position.ref, s: position.size, i: position.index, d: position.id };
    if (position.next) payload.n = position.next;
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${body}.${this.sign(body).toString('base64url')}`;
  }

  decode(cursor: string, tenantId: string, list: ListName, argument: 'after' | 'before'): CursorPosition {
    const invalid = () => badUserInput(`"${argument}" is not a cursor issued by this server for ${list} of this tenant; use a cursor from this list's edges or pageInfo`);
    const [body, signature, ...rest] = cursor.split('.');
    if (!body || !signature || rest.length > 0 || cursor.length > MAX_CURSOR_LENGTH) throw invalid();
    const expected = this.sign(body);
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid();
    let payload: CursorPayload;
    try {
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as CursorPayload;
    } catch {
      throw invalid();
    }
    if (payload.t !== tenantId || payload.l !== list) throw invalid();
    if (!Number.isInteger(payload.i) || payload.i < 0 || typeof payload.d !== 'string') throw invalid();
    if (!Number.isInteger(payload.s) || payload.s < 1) throw invalid();
    if (payload.r !== null && typeof payload.r !== 'string') throw invalid();
    if (payload.n !== undefined && typeof payload.n !== 'string') throw invalid();
    return { ref: payload.r, size: payload.s, index: payload.i, id: payload.d, ...(payload.n !== undefined && { next: payload.n }) };
  }

  private sign(body: string): Buffer {
    return createHmac('sha256', this.key).update(`wfs-cursor:v1:${body}`).digest().subarray(0, SIGNATURE_BYTES);
  }
}
