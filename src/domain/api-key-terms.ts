import { DomainError, invalidInput } from './errors.ts';
import { PERMISSIONS, type Permission } from './events.ts';
import { parseAllowedIps } from './ip-allowlist.ts';
import { Decimal, parsePositiveAmount } from './money.ts';
import { requiredText } from './text.ts';

export const DEFAULT_EXPIRY_DAYS = 365;
export const MAX_EXPIRY_DAYS = 3650;

/** The terms a maker asks for, as a console form or the CLI gives them (strings, before validation). */
export interface KeyTermsInput {
  label: unknown;
  permissions: unknown;
  maxTransactionAmount?: unknown;
  maxDailyVolume?: unknown;
  allowedIPs?: unknown;
  expiresInDays?: unknown;
}

export interface KeyTerms {
  label: string;
  permissions: Permission[];
  maxTransactionAmount: string | null;
  maxDailyVolume: string | null;
  allowedIPs: string[];
  expiresInDays: number;
}

// The CLI's spelling of each permission, beside the contract's.
const PERMISSION_ALIASES: Record<string, Permission> = {
  'read-balance': 'Read Balance',
  'read-transactions': 'Read Transactions',
  'perform-operations': 'Perform Operations',
};

function parsePermission(value: string): Permission {
  const trimmed = value.trim();
  const permission = PERMISSION_ALIASES[trimmed.toLowerCase()] ?? PERMISSIONS.find((p) => p === trimmed);
  if (!permission)
    throw invalidInput(
      'permissions',
      `unknown permission "${trimmed.slice(0, 40)}"; use read-balance, read-transactions, perform-operations`,
    );
  return permission;
}

function optionalAmount(field: string, input: unknown, scale: number): string | null {
  return input === undefined || input === null || input === '' ? null : parsePositiveAmount(field, input, scale);
}

/** Validates and normalizes key terms; each refusal names its field. */
export function parseKeyTerms(input: KeyTermsInput, scale: number): KeyTerms {
  const label = requiredText('label', input.label, 100);
  const rawPermissions = typeof input.permissions === 'string' ? input.permissions.split(',') : input.permissions;
  if (!Array.isArray(rawPermissions) || rawPermissions.some((p) => typeof p !== 'string')) {
    throw invalidInput('permissions', 'permissions must be a list');
  }
  const permissions = PERMISSIONS.filter((p) =>
    (rawPermissions as string[])
      .filter((r) => r.trim() !== '')
      .map(parsePermission)
      .includes(p),
  );
  if (permissions.length === 0) throw invalidInput('permissions', 'a key needs at least one permission');

  const maxTransactionAmount = optionalAmount('maxTransactionAmount', input.maxTransactionAmount, scale);
  const maxDailyVolume = optionalAmount('maxDailyVolume', input.maxDailyVolume, scale);
  if (maxTransactionAmount && maxDailyVolume && new Decimal(maxTransactionAmount).gt(maxDailyVolume)) {
    throw new DomainError(
      'INVALID_INPUT',
      'the max transaction amount cannot exceed the max daily volume',
      'maxTransactionAmount',
    );
  }

  const ips = input.allowedIPs ?? [];
  if (typeof ips !== 'string' && !(Array.isArray(ips) && ips.every((ip) => typeof ip === 'string'))) {
    throw invalidInput('allowedIPs', 'allowedIPs must be a comma-separated list of addresses or CIDR ranges');
  }
  const allowedIPs = parseAllowedIps('allowedIPs', ips);

  const rawDays = input.expiresInDays;
  const days =
    rawDays === undefined || rawDays === ''
      ? DEFAULT_EXPIRY_DAYS
      : typeof rawDays === 'number'
        ? rawDays
        : typeof rawDays === 'string' && /^\d{1,5}$/.test(rawDays)
          ? Number(rawDays)
          : Number.NaN;
  if (!Number.isInteger(days) || days < 1 || days > MAX_EXPIRY_DAYS) {
    throw invalidInput('expiresInDays', `expiresInDays must be a whole number of days from 1 to ${MAX_EXPIRY_DAYS}`);
  }
  return { label, permissions, maxTransactionAmount, maxDailyVolume, allowedIPs, expiresInDays: days };
}
