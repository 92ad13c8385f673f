import { pino, type Logger } from 'pino';

// Structured JSON logs. Redaction is a second line of defence: no code logs a secret or an Authorization
// header on purpose, and these paths make sure an accident does not either.
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'wallet-ops' },
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'apiKey', 'secret', 'password', '*.apiKey', '*.secret', '*.password'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

export type { Logger };
