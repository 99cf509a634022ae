import pino, { type DestinationStream, type Logger } from 'pino';
import { requestLogFields } from './requestScope';

export type { Logger } from 'pino';

/**
 * Structured JSON logs. We never log secrets or tokens in the first place; the
 * redaction list is a second line of defence for fields that might carry them.
 * The mixin adds the request id (and the trace id when tracing is on) to every line
 * written while a request is served, from its AsyncLocalStorage scope: no call site
 * passes them by hand.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'wfs-subgraph' },
      mixin: requestLogFields,
      redact: {
        paths: ['clientSecret', 'client_secret', 'accessToken', 'access_token', 'authorization', '*.clientSecret', '*.accessToken', '*.authorization', 'headers.authorization', 'headers["router-authorization"]'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
