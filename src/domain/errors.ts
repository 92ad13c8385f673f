/**
 * Refusals of the domain: every one has a stable code, so that the HTTP layer, the CLI and the console map
 * them once (to a problem response, an exit status, a message) instead of parsing messages.
 */
export const DOMAIN_ERROR_CODES = [
  'INVALID_INPUT',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'SHORT_CODE_TAKEN',
  'EMAIL_TAKEN',
  'PHONE_TAKEN',
  'ROLE_REQUIRED',
  'OTHER_PARTY',
  'SAME_USER',
  'WRONG_STATE',
  'KEY_EXPIRED',
  'CONCURRENCY_CONFLICT',
  'TRANSACTION_LIMIT_EXCEEDED',
  'DAILY_VOLUME_EXCEEDED',
  'INSUFFICIENT_BALANCE',
  /** CASH_OUT_CONSENT=individual-code: the individual's one-time code is missing, wrong, expired, used or too small. */
  'CASH_OUT_NOT_AUTHORIZED',
  'IDEMPOTENCY_KEY_REUSED',
  'IDEMPOTENCY_KEY_IN_FLIGHT',
] as const;

export type DomainErrorCode = (typeof DOMAIN_ERROR_CODES)[number];

export class DomainError extends Error {
  readonly code: DomainErrorCode;
  /** The input field at fault, for validation refusals. */
  readonly field?: string;
  constructor(code: DomainErrorCode, message: string, field?: string) {
    super(message);
    this.code = code;
    this.field = field;
    this.name = 'DomainError';
  }
}

export const invalidInput = (field: string, message: string) => new DomainError('INVALID_INPUT', message, field);
