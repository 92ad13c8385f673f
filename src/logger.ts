import { pino, type Logger } from 'pino';

// Structured JSON logs. Redaction is a second line of defence: no code logs a secret or an Authorization
// header on purpose, and these paths make sure an accident does not either.
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'wallet-ops' },
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          'headers.authorization',
          'apiKey',
          'secret',
          'password',
          '*.apiKey',
          '*.secret',
          '*.password',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

/**
 * Standard output written asynchronously, for the server: a request's log line is not a blocking write on the
 * request's path (lines logged while a write is under way go out together in the next one). Nothing is held
 * back waiting for more: each write starts as soon as the one before it ends. A stopping server awaits
 * `flushLogs` before it exits; at any other exit pino writes what is left synchronously (its exit hook).
 */
export function asyncStdout(): pino.DestinationStream {
  return pino.destination({ dest: 1, sync: false });
}

/** Resolves once every line logged so far is written. */
export function flushLogs(logger: Logger): Promise<void> {
  return new Promise((resolve) => logger.flush(() => resolve()));
}

export type { Logger };
