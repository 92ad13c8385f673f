import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { collectCredential, findUserByEmail, requireParty } from '../commands/back-office.ts';
import {
  approveWebhookEndpoint,
  approveWebhookSecretRotation,
  decideOnWebhookSecretRotation,
  disableWebhookEndpoint,
  rejectWebhookEndpoint,
  requestWebhookEndpoint,
  type WebhookCommandDeps,
} from '../commands/webhooks.ts';
import { loadUserState } from '../commands/user-admin.ts';
import type { RecordedEvent } from '../ports/event-store.ts';
import { streamPrefixes } from '../domain/streams.ts';
import { WEBHOOK_EVENT_TYPES } from '../domain/events.ts';
import { foldWebhookEndpoints, type WebhookEndpointDoc } from '../projections/webhook-endpoints.ts';
import { registerRotationCommands } from './rotation-commands.ts';
import {
  common,
  parsePartyRef,
  UsageError,
  withBackOffice,
  withCredentials,
  withStores,
  type CommonOptions,
} from './support.ts';
import {
  attemptsOfDelivery,
  deliveriesOfEndpoint,
  WEBHOOK_COLLECTIONS,
  type AttemptDoc,
  type DeliveryDoc,
} from '../webhooks/deliveries.ts';
import { parseRedeliveryTarget, requestRedelivery } from '../webhooks/redelivery.ts';

/**
 * `webhook`: the webhook-endpoint lifecycle under maker-checker, acting `--as` a console user under the same
 * rules as the console: a maker adds, another checker of the party approves (the signing secret waits for
 * the maker, who collects it once with `webhook secret`) or rejects, a maker or checker disables at once.
 */
type AsOptions = CommonOptions & { as: string };
const PAGE = 1000;

/** withCredentials, plus what the webhook commands need of the configuration. */
function withWebhooks<T>(
  opts: CommonOptions,
  action: (deps: WebhookCommandDeps) => Promise<T>,
  human: (result: T) => string,
) {
  return withCredentials(
    opts,
    (deps, _stores, config) => action({ ...deps, allowInsecureLocalhost: config.WEBHOOK_ALLOW_INSECURE_LOCALHOST }),
    human,
  );
}

type ListedEndpoint = Omit<WebhookEndpointDoc, 'position'> & { disabledByEmail?: string };

const endpointLine = (e: ListedEndpoint) =>
  `${e.id}  ${e.status.padEnd(8)} ${e.url}  [${e.eventTypes.join(', ')}]` +
  (e.status === 'disabled' ? `  disabled by ${e.disabledByEmail ?? e.disabledBy}: ${e.reason}` : '');

/** A person reads who disabled an endpoint by email; `system` (a day of failures) stays as it is. */
async function withDisablerEmail(
  deps: Parameters<typeof loadUserState>[0],
  endpoint: ListedEndpoint,
): Promise<ListedEndpoint> {
  const by = endpoint.disabledBy;
  if (endpoint.status !== 'disabled' || !by || by === 'system') return endpoint;
  const user = await loadUserState(deps, by).catch(() => undefined);
  return user ? { ...endpoint, disabledByEmail: user.email } : endpoint;
}

export function registerWebhookCommands(program: Command): void {
  const webhook = program.command('webhook').description('webhook endpoints of a party (maker-checker)');
  common(webhook.command('add'))
    .description('a maker registers a webhook endpoint for their party (pending approval by a checker)')
    .requiredOption('--as <email>', 'the maker')
    .requiredOption('--url <url>', 'https URL that receives the deliveries')
    .requiredOption('--events <list>', `comma-separated: ${WEBHOOK_EVENT_TYPES.join(',')}`)
    .action(async (opts: AsOptions & { url: string; events: string }) =>
      withWebhooks(
        opts,
        async (deps) =>
          requestWebhookEndpoint(
            deps,
            await findUserByEmail(deps, opts.as),
            { url: opts.url, eventTypes: opts.events },
            randomUUID(),
          ),
        (r) => `webhook endpoint requested: ${r.endpointID} (pending approval by a checker)`,
      ),
    );
  common(webhook.command('approve'))
    .description(
      'a checker approves a pending endpoint; its signing secret waits for the maker who registered it (`webhook ' +
        'secret`)',
    )
    .argument('<endpointID>')
    .requiredOption('--as <email>', 'the checker')
    .action(async (endpointID: string, opts: AsOptions) =>
      withWebhooks(
        opts,
        async (deps) => {
          const { heldFor } = await approveWebhookEndpoint(
            deps,
            await findUserByEmail(deps, opts.as),
            endpointID,
            randomUUID(),
          );
          return { endpointID, status: 'active', secretHeldFor: (await loadUserState(deps, heldFor)).email };
        },
        (r) =>
          `webhook endpoint approved: ${r.endpointID}\nits signing secret waits for ${r.secretHeldFor}, who ` +
          `collects it once with: wallet-ops webhook secret ${r.endpointID} --as ${r.secretHeldFor}`,
      ),
    );
  common(webhook.command('secret'))
    .description(
      'the maker who registered an approved endpoint collects its signing secret, once (within 24 hours of the ' +
        'approval)',
    )
    .argument('<endpointID>')
    .requiredOption('--as <email>', 'the maker who registered the endpoint')
    .action(async (endpointID: string, opts: AsOptions) =>
      withWebhooks(
        opts,
        async (deps) => {
          const { signingSecret } = await collectCredential(deps, await findUserByEmail(deps, opts.as), {
            kind: 'webhook-endpoint',
            id: endpointID,
          });
          return { endpointID, secret: signingSecret };
        },
        (r) => `signing secret of ${r.endpointID} (shown once, store it now): ${r.secret}`,
      ),
    );
  common(webhook.command('reject'))
    .description('a checker rejects a pending endpoint')
    .argument('<endpointID>')
    .requiredOption('--as <email>', 'the checker')
    .option('--reason <text>', 'why')
    .action(async (endpointID: string, opts: AsOptions & { reason?: string }) =>
      withWebhooks(
        opts,
        async (deps) =>
          rejectWebhookEndpoint(
            deps,
            await findUserByEmail(deps, opts.as),
            endpointID,
            opts.reason ?? null,
            randomUUID(),
          ),
        (r) => `webhook endpoint ${r.endpointID}: rejected`,
      ),
    );
  common(webhook.command('disable'))
    .description('a maker or checker of the party disables an active endpoint at once (final)')
    .argument('<endpointID>')
    .requiredOption('--as <email>', 'the acting user')
    .requiredOption('--reason <text>', 'why')
    .action(async (endpointID: string, opts: AsOptions & { reason: string }) =>
      withWebhooks(
        opts,
        async (deps) =>
          disableWebhookEndpoint(deps, await findUserByEmail(deps, opts.as), endpointID, opts.reason, randomUUID()),
        (r) => `webhook endpoint ${r.endpointID}: disabled`,
      ),
    );
  registerRotationCommands(webhook, {
    command: 'webhook',
    noun: 'webhook endpoint',
    idField: 'endpointID',
    decide: (deps, _config, user, endpointID, decision, correlationId) =>
      decideOnWebhookSecretRotation(deps, user, endpointID, decision, correlationId),
    approve: (deps, config, user, endpointID, correlationId) =>
      approveWebhookSecretRotation(
        { ...deps, allowInsecureLocalhost: config.WEBHOOK_ALLOW_INSECURE_LOCALHOST },
        user,
        endpointID,
        correlationId,
      ),
  });
  common(webhook.command('list'))
    .description("a party's webhook endpoints, newest first (never a secret)")
    .requiredOption('--party <party>', 'distributor:ID or merchant:ID')
    .action(async (opts: CommonOptions & { party: string }) =>
      withBackOffice(
        opts,
        async (deps) => {
          const party = parsePartyRef(opts.party);
          await requireParty(deps, party);
          const events: RecordedEvent[] = [];
          for (let from = 1; ;) {
            const page = await deps.store.readAll({
              fromPosition: from,
              maxCount: PAGE,
              filter: { streamPrefixes: [streamPrefixes.webhookEndpoint] },
            });
            events.push(...page);
            if (page.length < PAGE) break;
            from = page.at(-1)!.position + 1;
          }
          const endpoints = foldWebhookEndpoints(events)
            .filter((e) => e.partyType === party.type && e.partyID === party.id)
            .map(({ position: _position, ...e }) => e);
          return Promise.all(endpoints.map((e) => withDisablerEmail(deps, e)));
        },
        (endpoints) => endpoints.map(endpointLine).join('\n') || '(no webhook endpoints)',
      ),
    );
  common(webhook.command('deliveries'))
    .description("an endpoint's delivery log, newest event first: status, attempts, the receiver's answers")
    .argument('<endpointID>')
    .option('--limit <n>', 'deliveries to show', '20')
    .option('--attempts', 'every attempt of each delivery too')
    .action(async (endpointID: string, opts: CommonOptions & { limit: string; attempts?: boolean }) =>
      withStores(
        opts,
        async ({ readStore }) => {
          const limit = Number(opts.limit);
          if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000)
            throw new UsageError('--limit must be a whole number from 1 to 1000');
          await readStore.defineCollections(WEBHOOK_COLLECTIONS);
          const { deliveries, total } = await deliveriesOfEndpoint(readStore, endpointID, { limit });
          const withAttempts = await Promise.all(
            deliveries.map(async ({ body: _body, ...delivery }) => ({
              ...delivery,
              ...(opts.attempts ? { attemptLog: await attemptsOfDelivery(readStore, delivery.id) } : {}),
            })),
          );
          return { endpointID, total, deliveries: withAttempts };
        },
        (r) =>
          [`${r.total} deliveries to ${r.endpointID}`, ...r.deliveries.map((d) => deliveryLines(d, d.attemptLog))].join(
            '\n',
          ),
      ),
    );
  common(webhook.command('redeliver'))
    .description(
      'a maker sends one event again (--event), or every event since a time (--since): same event ids, same bodies',
    )
    .argument('<endpointID>')
    .requiredOption('--as <email>', 'the maker')
    .option('--event <eventID>', 'the event to send again (evt_…)')
    .option('--since <time>', 'ISO 8601: every event of the endpoint at or after it')
    .action(async (endpointID: string, opts: AsOptions & { event?: string; since?: string }) =>
      withStores(
        opts,
        async ({ eventStore, readStore }) => {
          const target = parseRedeliveryTarget({ eventID: opts.event, since: opts.since });
          await readStore.defineCollections(WEBHOOK_COLLECTIONS);
          return requestRedelivery(
            readStore,
            await findUserByEmail({ store: eventStore }, opts.as),
            endpointID,
            target,
            new Date(),
          );
        },
        (r) => `${r.queued} ${r.queued === 1 ? 'delivery' : 'deliveries'} of ${r.endpointID} queued again`,
      ),
    );
}

function deliveryLines(d: Omit<DeliveryDoc, 'body'>, attempts: AttemptDoc[] | undefined): string {
  const state =
    d.status === 'pending' && d.attempts > 0
      ? `pending, next attempt ${new Date(d.nextAttemptAt).toISOString()}`
      : d.status;
  const head =
    `${d.eventID}  ${d.eventType.padEnd(19)} ${d.createdAt}  ${state}  attempts ` +
    `${d.attempts}${
      d.lastStatusCode === null ? '' : `  last HTTP ${d.lastStatusCode}`
    }${d.lastError && d.status !== 'delivered' ? `  ${d.lastError}` : ''}`;
  return [
    head,
    ...(attempts ?? []).map(
      (a) =>
        `    #${a.attempt} ${a.at} ${a.ok ? 'ok' : 'failed'} ${a.statusCode ?? '-'} ${a.durationMs} ` +
        `ms${a.error ? ` ${a.error}` : ''}`,
    ),
  ].join('\n');
}
