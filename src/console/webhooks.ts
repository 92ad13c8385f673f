import type { Request, Response, Router } from 'express';
import {
  approveWebhookEndpoint,
  approveWebhookSecretRotation,
  decideOnWebhookSecretRotation,
  disableWebhookEndpoint,
  rejectWebhookEndpoint,
  requestWebhookEndpoint,
} from '../commands/webhooks.ts';
import type { RotationDecision } from '../commands/back-office.ts';
import { DomainError } from '../domain/errors.ts';
import { streams } from '../domain/streams.ts';
import { isEndpointID, parseWebhookEventTypes, parseWebhookUrl } from '../domain/webhook-endpoints.ts';
import { foldWebhookEndpoints, type WebhookEndpointDoc } from '../projections/webhook-endpoints.ts';
import { webhookEndpointsOfParty } from '../projections/webhook-endpoints-queries.ts';
import {
  attemptsOfDelivery,
  deliveriesOfEndpoint,
  deliveryID,
  getDelivery,
  getRoute,
  redeliverEvent,
  redeliverSince,
  type RouteDoc,
} from '../webhooks/deliveries.ts';
import {
  ConsoleError,
  correlationId,
  field,
  fields,
  partyOf,
  requireRole,
  viewer,
  type ConsoleServices,
  formRefusal,
  sentence,
} from './context.ts';
import { deliveryPage, endpointPage } from './webhook-endpoint-pages.ts';
import {
  disablePage,
  rotateEndpointPage,
  EMPTY_ENDPOINT_FORM,
  newEndpointPage,
  webhooksPage,
  type EndpointFormValues,
  type EndpointView,
  type WebhookViewer,
} from './webhooks-pages.ts';
import { reasonFormRoutes, redirectWith, renderPage } from './render.ts';
import { emailOf } from './users.ts';

/**
 * Webhooks: the party's endpoints under maker-checker, and each endpoint's delivery log. Every action checks
 * the viewer's role and that the endpoint is their party's here; the commands check both again (and that a
 * checker never decides on their own request). An endpoint's page and every action read the endpoint's own
 * stream, so what was done a moment ago shows at once; the list comes from the read model.
 */
const LOG_PAGE = 25;
/** Webhook event ids as the outbox makes them; anything else names no delivery. */
const EVENT_ID = /^evt_[A-Za-z0-9_-]{1,64}$/;

const FIELD_WORDS: Record<string, string> = { url: 'the URL', eventTypes: 'the events' };
const humanize = (message: string) =>
  sentence(message.replace(/^(url|eventTypes)\b/, (name) => FIELD_WORDS[name] ?? name));

/** Every field's problem at once, in the domain's words: no rule is repeated here. */
function endpointFormErrors(values: EndpointFormValues, allowInsecureLocalhost: boolean): Record<string, string> {
  const errors: Record<string, string> = {};
  const check = (name: string, parse: () => unknown) => {
    try {
      parse();
    } catch (error) {
      if (!(error instanceof DomainError) || error.code !== 'INVALID_INPUT') throw error;
      errors[name] = humanize(error.message);
    }
  };
  check('url', () => parseWebhookUrl('url', values.url, { allowInsecureLocalhost }));
  check('eventTypes', () => parseWebhookEventTypes('eventTypes', values.eventTypes));
  return errors;
}

/**
 * `2025-01-31T14:05` (a datetime-local field, read as UTC), with seconds or a Z if given; null when it is not a time.
 */
export function parseSince(text: string): Date | null {
  const match = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})(:\d{2}(\.\d{1,3})?)?Z?$/.exec(text.trim());
  if (!match) return null;
  const date = new Date(`${match[1]}T${match[2]}${match[3] ?? ':00'}Z`);
  return Number.isNaN(date.getTime()) ? null : date;
}

const sinceValue = (date: Date) => date.toISOString().slice(0, 19);

export function webhookRoutes(router: Router, services: ConsoleServices): void {
  const { readStore, store, clock } = services.deps;
  const deps = services.webhooks;

  const viewerOf = (res: Response): WebhookViewer => {
    const { user, session } = viewer(res);
    return {
      userID: user.userID,
      maker: user.roles.includes('maker'),
      checker: user.roles.includes('checker'),
      session,
    };
  };

  async function withEmails(endpoint: WebhookEndpointDoc): Promise<EndpointView> {
    return {
      ...endpoint,
      requestedByEmail: await emailOf(services, endpoint.requestedBy),
      decidedByEmail: await emailOf(services, endpoint.decidedBy),
      disabledByEmail: await emailOf(services, endpoint.disabledBy),
      rotationRequestedByEmail: await emailOf(services, endpoint.rotationRequestedBy ?? null),
    };
  }

  /** The endpoint from its own stream, if it is the viewer's party's; another party's is as good as absent. */
  async function ownEndpoint(res: Response, endpointID: string): Promise<WebhookEndpointDoc> {
    const party = partyOf(res);
    const [endpoint] = isEndpointID(endpointID)
      ? foldWebhookEndpoints(await store.readStream(streams.webhookEndpoint(endpointID)))
      : [];
    if (!endpoint || endpoint.partyType !== party.type || endpoint.partyID !== party.id)
      throw new ConsoleError(404, 'There is no such webhook endpoint in your party.');
    return endpoint;
  }

  /** A maker's redelivery needs an active endpoint that the delivery consumer has seen. */
  async function redeliveryRoute(
    res: Response,
    endpointID: string,
  ): Promise<{ endpoint: WebhookEndpointDoc; route: RouteDoc }> {
    requireRole(res, 'maker');
    const endpoint = await ownEndpoint(res, endpointID);
    if (endpoint.status !== 'active')
      throw new ConsoleError(
        409,
        `This endpoint is ${endpoint.status}: only an active endpoint’s events can be redelivered.`,
      );
    const route = await getRoute(readStore, endpoint.id);
    if (!route)
      throw new ConsoleError(409, 'Nothing has been sent to this endpoint yet: there is nothing to redeliver.');
    return { endpoint, route };
  }

  const endpointPath = (endpointID: string) => `/console/webhooks/${encodeURIComponent(endpointID)}`;

  async function showEndpoint(
    req: Request,
    res: Response,
    endpoint: WebhookEndpointDoc,
    form: { since?: string; sinceError?: string } = {},
  ) {
    const offsetText = typeof req.query.offset === 'string' ? req.query.offset : '0';
    const offset = /^\d{1,7}$/.test(offsetText) ? Number(offsetText) : 0;
    const [route, log] = await Promise.all([
      getRoute(readStore, endpoint.id),
      deliveriesOfEndpoint(readStore, endpoint.id, { limit: LOG_PAGE, skip: offset }),
    ]);
    const since = form.since ?? sinceValue(new Date(clock().getTime() - 24 * 3_600_000));
    await renderPage(services, res, {
      title: `Webhook ${endpoint.url}`,
      section: 'webhooks',
      status: form.sinceError ? 400 : 200,
      body: endpointPage({
        viewer: viewerOf(res),
        endpoint: await withEmails(endpoint),
        route,
        deliveries: log.deliveries,
        total: log.total,
        page: { offset, limit: LOG_PAGE },
        since,
        ...(form.sinceError ? { sinceError: form.sinceError } : {}),
      }),
    });
  }

  router.get('/webhooks', async (_req, res) => {
    const endpoints = await Promise.all((await webhookEndpointsOfParty(readStore, partyOf(res))).map(withEmails));
    await renderPage(services, res, {
      title: 'Webhooks',
      section: 'webhooks',
      body: webhooksPage(viewerOf(res), endpoints),
    });
  });

  router.get('/webhooks/new', async (_req, res) => {
    requireRole(res, 'maker');
    await renderPage(services, res, {
      title: 'Register a webhook endpoint',
      section: 'webhooks',
      body: newEndpointPage(viewer(res).session, EMPTY_ENDPOINT_FORM, {}, deps.allowInsecureLocalhost),
    });
  });

  router.post('/webhooks', async (req, res) => {
    requireRole(res, 'maker');
    const values: EndpointFormValues = {
      url: (field(req, 'url') ?? '').slice(0, 4096),
      eventTypes: fields(req, 'eventTypes'),
    };
    const errors = endpointFormErrors(values, deps.allowInsecureLocalhost);
    if (Object.keys(errors).length > 0) {
      return renderPage(services, res, {
        title: 'Register a webhook endpoint',
        section: 'webhooks',
        status: 400,
        body: newEndpointPage(viewer(res).session, values, errors, deps.allowInsecureLocalhost),
      });
    }
    const { endpointID } = await requestWebhookEndpoint(deps, viewer(res).user, values, correlationId(res));
    await redirectWith(services, res, endpointPath(endpointID), {
      kind: 'ok',
      text:
        `Endpoint registered (${endpointID}). A checker of your party approves it; you will then see its signing ` +
        'secret once.',
    });
  });

  router.get('/webhooks/:endpointID', async (req, res) => {
    await showEndpoint(req, res, await ownEndpoint(res, String(req.params.endpointID)));
  });

  router.post('/webhooks/:endpointID/approve', async (req, res) => {
    requireRole(res, 'checker');
    const endpoint = await ownEndpoint(res, String(req.params.endpointID));
    // The signing secret is held for the maker who registered the endpoint, once; the checker never sees it.
    await approveWebhookEndpoint(deps, viewer(res).user, endpoint.id, correlationId(res));
    const maker = await emailOf(services, endpoint.requestedBy);
    await redirectWith(services, res, endpointPath(endpoint.id), {
      kind: 'ok',
      text:
        `Endpoint ${endpoint.url} approved. ${maker} will see its signing secret once, on their next page in the ` +
        'console.',
    });
  });

  router.post('/webhooks/:endpointID/reject', async (req, res) => {
    requireRole(res, 'checker');
    const endpoint = await ownEndpoint(res, String(req.params.endpointID));
    const reason = (field(req, 'reason') ?? '').trim();
    await rejectWebhookEndpoint(deps, viewer(res).user, endpoint.id, reason === '' ? null : reason, correlationId(res));
    await redirectWith(services, res, endpointPath(endpoint.id), {
      kind: 'ok',
      text: `Endpoint ${endpoint.url} rejected.`,
    });
  });

  reasonFormRoutes(router, services, {
    path: '/webhooks/:endpointID/rotate',
    title: 'Rotate a signing secret',
    section: 'webhooks',
    load: (req, res) => {
      requireRole(res, 'maker');
      return ownEndpoint(res, String(req.params.endpointID));
    },
    page: rotateEndpointPage,
    submit: async (req, res, endpoint) => {
      const request = { type: 'request', reason: field(req, 'reason') } as const;
      await decideOnWebhookSecretRotation(deps, viewer(res).user, endpoint.id, request, correlationId(res));
      return {
        location: endpointPath(endpoint.id),
        text: `Rotation of the signing secret of ${endpoint.url} requested. A checker of your party approves it.`,
      };
    },
  });

  router.post('/webhooks/:endpointID/rotation/approve', async (req, res) => {
    requireRole(res, 'checker');
    const endpoint = await ownEndpoint(res, String(req.params.endpointID));
    // Like an approval: the new secret is held for the maker who asked; the checker never sees it.
    const { heldFor, previousValidUntil } = await approveWebhookSecretRotation(
      deps,
      viewer(res).user,
      endpoint.id,
      correlationId(res),
    );
    await redirectWith(services, res, endpointPath(endpoint.id), {
      kind: 'ok',
      text:
        `Signing secret of ${endpoint.url} rotated. ${await emailOf(services, heldFor)} will see the new secret ` +
        'once, on their next page in the console; deliveries are signed with the previous secret too until ' +
        `${previousValidUntil}.`,
    });
  });

  const rotationDecision = (
    path: string,
    role: 'maker' | 'checker',
    make: (req: Request) => RotationDecision,
    done: (url: string) => string,
  ) =>
    router.post(`/webhooks/:endpointID/rotation/${path}`, async (req, res) => {
      requireRole(res, role);
      const endpoint = await ownEndpoint(res, String(req.params.endpointID));
      await decideOnWebhookSecretRotation(deps, viewer(res).user, endpoint.id, make(req), correlationId(res));
      await redirectWith(services, res, endpointPath(endpoint.id), { kind: 'ok', text: done(endpoint.url) });
    });
  rotationDecision(
    'reject',
    'checker',
    (req) => ({ type: 'reject', reason: (field(req, 'reason') ?? '').trim() || null }),
    (url) => `Rotation of the signing secret of ${url} rejected: the endpoint keeps its secret.`,
  );
  rotationDecision(
    'withdraw',
    'maker',
    () => ({ type: 'withdraw' }),
    (url) => `Rotation of the signing secret of ${url} withdrawn.`,
  );

  router.get('/webhooks/:endpointID/disable', async (req, res) => {
    const endpoint = await ownEndpoint(res, String(req.params.endpointID));
    if (!viewerOf(res).maker && !viewerOf(res).checker)
      throw new ConsoleError(403, 'This needs the maker or checker role.');
    await renderPage(services, res, {
      title: 'Disable a webhook endpoint',
      section: 'webhooks',
      body: disablePage(viewer(res).session, endpoint),
    });
  });

  router.post('/webhooks/:endpointID/disable', async (req, res) => {
    const endpoint = await ownEndpoint(res, String(req.params.endpointID));
    const { refused } = await formRefusal(() =>
      disableWebhookEndpoint(deps, viewer(res).user, endpoint.id, field(req, 'reason'), correlationId(res)),
    );
    if (refused)
      return renderPage(services, res, {
        title: 'Disable a webhook endpoint',
        section: 'webhooks',
        status: 400,
        body: disablePage(viewer(res).session, endpoint, sentence(refused.message)),
      });
    await redirectWith(services, res, endpointPath(endpoint.id), {
      kind: 'ok',
      text: `Endpoint ${endpoint.url} disabled: nothing more is sent to it.`,
    });
  });

  router.post('/webhooks/:endpointID/redeliver', async (req, res) => {
    const { endpoint, route } = await redeliveryRoute(res, String(req.params.endpointID));
    const text = (field(req, 'since') ?? '').slice(0, 64);
    const since = parseSince(text);
    if (!since)
      return showEndpoint(req, res, endpoint, {
        since: text,
        sinceError: 'Give a date and time, such as 2025-01-31T14:05 (UTC).',
      });
    const queued = await redeliverSince(readStore, route, since, viewer(res).user.userID, clock());
    const when = `${since.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
    await redirectWith(services, res, endpointPath(endpoint.id), {
      kind: 'ok',
      text:
        queued === 0
          ? `No event since ${when} was sent to this endpoint: nothing to redeliver.`
          : `${queued} event${queued === 1 ? '' : 's'} since ${when} queued for redelivery.`,
    });
  });

  router.get('/webhooks/:endpointID/deliveries/:eventID', async (req, res) => {
    const endpoint = await ownEndpoint(res, String(req.params.endpointID));
    const eventID = String(req.params.eventID);
    const delivery = EVENT_ID.test(eventID) ? await getDelivery(readStore, deliveryID(endpoint.id, eventID)) : null;
    if (!delivery) throw new ConsoleError(404, 'This event was never sent to this endpoint.');
    const [attempts, route] = await Promise.all([
      attemptsOfDelivery(readStore, delivery.id),
      getRoute(readStore, endpoint.id),
    ]);
    await renderPage(services, res, {
      title: `Delivery ${delivery.eventID}`,
      section: 'webhooks',
      body: deliveryPage({
        viewer: viewerOf(res),
        endpoint: await withEmails(endpoint),
        route,
        delivery,
        attempts,
        redeliveredByEmail: await emailOf(services, delivery.redeliveredBy),
      }),
    });
  });

  router.post('/webhooks/:endpointID/deliveries/:eventID/redeliver', async (req, res) => {
    const { endpoint, route } = await redeliveryRoute(res, String(req.params.endpointID));
    const eventID = String(req.params.eventID);
    if (!EVENT_ID.test(eventID)) throw new ConsoleError(404, 'This event was never sent to this endpoint.');
    await redeliverEvent(readStore, route, eventID, viewer(res).user.userID, clock());
    const back =
      field(req, 'from') === 'delivery'
        ? `${endpointPath(endpoint.id)}/deliveries/${encodeURIComponent(eventID)}`
        : endpointPath(endpoint.id);
    await redirectWith(services, res, back, {
      kind: 'ok',
      text: `Event ${eventID} queued for redelivery to ${endpoint.url}: same event id, same body.`,
    });
  });
}
