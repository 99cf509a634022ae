import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

/**
 * Structured JSON logs. We never log secrets or tokens in the first place; the
 * redaction list is a second line of defence for fields that might carry them.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'wfs-subgraph' },
      redact: {
        paths: ['clientSecret', 'client_secret', 'accessToken', 'access_token', 'authorization', '*.clientSecret', '*.accessToken', '*.authorization', 'headers.authorization', 'headers["router-authorization"]'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
