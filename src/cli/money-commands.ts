import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { issueCashOutCode } from '../commands/cash-out-consent.ts';
import { individualPay, issueFloat } from '../commands/channel-operations.ts';
import { PartyLookup } from '../commands/party-lookup.ts';
import { normalizePhone } from '../domain/phone.ts';
import { formatAmount } from '../domain/money.ts';
import { walletAddress } from '../ports/ledger.ts';
import {
  common,
  operatorContext,
  parsePartyRef,
  parseWalletRef,
  secretsKeyOf,
  UsageError,
  withLedger,
  withStores,
  type CommonOptions,
} from './support.ts';

/** Money in and out of wallets from other channels, and reading any wallet's balance. */
export function registerMoneyCommands(program: Command): void {
  const treasury = program.command('treasury').description('the platform treasury');
  common(treasury.command('issue'))
    .description(
      "issue e-money to a distributor's float (executed without a checker; the operator is recorded as the actor)",
    )
    .requiredOption('--to <party>', 'distributor:ID')
    .requiredOption('--amount <amount>', 'decimal amount')
    .action(async (opts: CommonOptions & { to: string; amount: string }) =>
      withStores(
        opts,
        ({ eventStore }, config) =>
          issueFloat(
            {
              store: eventStore,
              lookup: new PartyLookup(eventStore),
              clock: () => new Date(),
              assetScale: config.ASSET_SCALE,
            },
            { to: parsePartyRef(opts.to), amount: opts.amount },
            operatorContext(),
          ),
        (r) => `issuance requested and approved: ${r.operationID}`,
      ),
    );

  const individual = program.command('individual').description("an individual's wallet app, for demos and tests");
  common(individual.command('pay'))
    .description('an individual pays a merchant from the wallet app (authorized by the individual; no checker)')
    .requiredOption('--from <phone>', "the individual's phone, international format")
    .requiredOption('--to-merchant <shortCode>', "the merchant's short code")
    .requiredOption('--amount <amount>', 'decimal amount')
    .option('--memo <text>', 'note shown to the merchant')
    .action(async (opts: CommonOptions & { from: string; toMerchant: string; amount: string; memo?: string }) =>
      withStores(
        opts,
        ({ eventStore }, config) => {
          const phone = normalizePhone('from', opts.from);
          return individualPay(
            {
              store: eventStore,
              lookup: new PartyLookup(eventStore),
              clock: () => new Date(),
              assetScale: config.ASSET_SCALE,
            },
            { from: phone, toMerchantShortCode: opts.toMerchant, amount: opts.amount, memo: opts.memo },
            { actor: `individual:${phone}`, correlationId: randomUUID() },
          );
        },
        (r) => `payment requested: ${r.operationID}`,
      ),
    );

  common(individual.command('cash-out-code'))
    .description(
      'an individual asks the wallet app for a one-time cash-out code to give the agent ' +
        '(CASH_OUT_CONSENT=individual-code): valid once, for 10 minutes; stored only hashed',
    )
    .requiredOption('--phone <phone>', "the individual's phone, international format")
    .option('--amount <amount>', 'the most the cash-out may take (default: any amount)')
    .action(async (opts: CommonOptions & { phone: string; amount?: string }) =>
      withStores(
        opts,
        ({ eventStore }, config) => {
          const phone = normalizePhone('phone', opts.phone);
          return issueCashOutCode(
            {
              store: eventStore,
              lookup: new PartyLookup(eventStore),
              clock: () => new Date(),
              assetScale: config.ASSET_SCALE,
              secretsKey: secretsKeyOf(opts, config),
            },
            { phone, ...(opts.amount === undefined ? {} : { maxAmount: opts.amount }) },
            { actor: `individual:${phone}`, correlationId: randomUUID() },
          );
        },
        (r) =>
          `cash-out code for ${r.phone}: ${r.code} (once, until ` +
          `${r.expiresAt}${r.maxAmount === null ? '' : `, for at most ${r.maxAmount}`})`,
      ),
    );

  common(program.command('balance'))
    .description('the balance of any wallet, as the ledger holds it')
    .requiredOption('--party <party>', 'distributor:ID, merchant:ID or individual:PHONE')
    .action(async (opts: CommonOptions & { party: string }) =>
      withLedger(
        opts,
        async (_stores, ledger, config) => {
          const wallet = parseWalletRef(opts.party);
          if (wallet.kind === 'individual') wallet.id = normalizePhone('party', wallet.id);
          if (!wallet.id) throw new UsageError('--party needs an id');
          return { balance: formatAmount(await ledger.balance(walletAddress(wallet)), config.ASSET_SCALE) };
        },
        (r) => r.balance,
      ),
    );
}
