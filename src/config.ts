import { z } from 'zod';
import { feeScheduleSchema } from './domain/fees.ts';
import { parseAllowedIps } from './domain/ip-allowlist.ts';
import { isValidTimeZone } from './domain/volume-day.ts';

/**
 * All configuration, from the environment, validated once at start. Each key has a doc and a default;
 * a bad value stops the process with a message naming the variable. The README's table mirrors this.
 */
const schema = z.object({
  DATA_DIR: z.string().min(1).default('./data').describe('Directory of the embedded stores (event store, read models).'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000).describe('HTTP port of the API.'),
  HOST: z.string().min(1).default('127.0.0.1').describe('Address the HTTP server binds to (0.0.0.0 in containers).'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('pino log level.'),
  ASSET_SCALE: z.coerce.number().int().min(0).max(8).default(2).describe('Decimal places of the currency; amounts with more are refused.'),
  TRUST_PROXY: z
    .string()
    .default('false')
    .transform((value, ctx): boolean | number | string[] => {
      if (value === 'false' || value === '') return false;
      if (value === 'true') return true;
      if (/^\d{1,2}$/.test(value)) return Number(value);
      try {
        return parseAllowedIps('TRUST_PROXY', value);
      } catch {
        ctx.addIssue({ code: 'custom', message: 'use false, true, a hop count, or a comma-separated list of proxy addresses or CIDR ranges' });
        return z.NEVER;
      }
    })
    .describe('Whether to take the client address from X-Forwarded-For: false (default), true, a hop count, or the proxies\' addresses/CIDRs.'),
  VOLUME_TIME_ZONE: z
    .string()
    .default('UTC')
    .refine(isValidTimeZone, 'an IANA time zone such as UTC or Africa/Lagos')
    .describe('Time zone whose calendar day bounds a key\'s max daily volume.'),
  FEE_SCHEDULE: z
    .string()
    .default('{}')
    .transform((value, ctx) => {
      try {
        return feeScheduleSchema.parse(JSON.parse(value));
      } catch {
        ctx.addIssue({ code: 'custom', message: 'JSON such as {"pay-merchant":{"flat":"0.50","percent":"1.5"}} for cash-out, pay-merchant, pay-individual' });
        return z.NEVER;
      }
    })
    .describe('Fees of merchant operations per type: JSON {"<type>": {"flat": "0.00", "percent": "0"}}; default none.'),
});

export type Config = z.infer<typeof schema>;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message} (got ${JSON.stringify(env[String(issue.path[0])])})`);
  throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
}

/** Variable, default and doc of every setting, for the README and `--help`. */
export const configDocs = Object.entries(schema.shape).map(([name, field]) => ({ name, description: field.description ?? '' }));
