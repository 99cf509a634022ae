import type { IncomingMessage } from 'node:http';

/**
 * A person who opens `/graphql` in a browser: a GET that prefers HTML and carries no
 * operation. Apollo Server would answer it with a CSRF-prevention error (a GET
 * without a preflight header); we send the browser to the explorer instead.
 */
export function wantsExplorer(req: IncomingMessage): boolean {
  if (req.method !== 'GET') return false;
  const accept = req.headers.accept ?? '';
  if (!/\btext\/html\b/i.test(accept)) return false;
  return !new URLSearchParams((req.url ?? '').split('?')[1] ?? '').has('query');
}
