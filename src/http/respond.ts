import type { ServerResponse } from 'node:http';

/** A small JSON answer (health, errors before GraphQL runs), with its length. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A GraphQL-shaped error answer for requests refused before execution. */
export function sendGraphQLError(res: ServerResponse, status: number, code: string, message: string): void {
  sendJson(res, status, { errors: [{ message, extensions: { code } }] });
}
