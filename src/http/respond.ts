import type { ServerResponse } from 'node:http';
import { messageOf, refusal, statusOf, type RefusalReason } from '../graphql/admission/refusals';
import type { ErrorCode } from '../graphql/errors';

/**
 * A small JSON answer (health, errors before GraphQL runs), with its length. Each says
 * how things stand at this moment (a refusal for a full replica, a readiness), so none
 * may be kept by a gateway or proxy: `no-store`, as Apollo answers its own errors.
 */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}

/** A GraphQL-shaped error answer for requests refused before execution. */
export function sendGraphQLError(res: ServerResponse, status: number, code: ErrorCode, message: string): void {
  sendJson(res, status, { errors: [{ message, extensions: { code } }] });
}

/** A refusal's answer over HTTP: its status, code and message from the one table (graphql/admission/refusals.ts); `worded` where its check names a configured bound. */
export function sendRefusal(res: ServerResponse, reason: RefusalReason, worded?: string): void {
  const status = statusOf(reason);
  const { code } = refusal(reason);
  if (status === undefined || code === null) throw new Error(`refusal ${reason} has no HTTP answer`);
  sendGraphQLError(res, status, code, messageOf(reason, worded));
}
