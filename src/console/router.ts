import { readFileSync } from 'node:fs';
import express, { Router } from 'express';
import { PartyLookup } from '../commands/party-lookup.ts';
import { DEFAULT_ROTATION_OVERLAP_HOURS } from '../domain/secret-rotation.ts';
import { StateCache } from '../commands/pipeline.ts';
import { adminRoutes } from './admin.ts';
import { userAdminRoutes } from './admin-users.ts';
import { webhookRoutes } from './webhooks.ts';
import { ConsoleError, type ConsoleDeps, type ConsoleServices } from './context.ts';
import { dashboardRoute } from './dashboard.ts';
import { WEBHOOK_COLLECTIONS } from '../webhooks/deliveries.ts';
import { securityHeaders } from './http-security.ts';
import { refuseControlCharacters } from './input-guard.ts';
import { keyRoutes } from './keys.ts';
import { DEFAULT_THROTTLE, LOGIN_ATTEMPTS_COLLECTION, LoginThrottle } from './login-throttle.ts';
import { loginRoutes, logoutRoute, requireSession } from './login.ts';
import { HeldCredentials, SECRETS_COLLECTION } from '../commands/held-credentials.ts';
import { operationFindRoutes } from './operation-find.ts';
import { operationRoutes } from './operations.ts';
import { CONSOLE_OPERATIONS_COLLECTION } from '../projections/console-operations.ts';
import { passwordRoutes } from './password.ts';
import { consoleErrorHandler } from './error-page.ts';
import { waitingRoute } from './waiting.ts';
import { ConsoleSessions, DEFAULT_SESSION_TIMES, SESSIONS_COLLECTION } from './sessions.ts';

export type { ConsoleDeps } from './context.ts';

/**
 * The back-office web console under /console: server-rendered pages, one stylesheet and one small script for
 * progressive enhancement. Served by wallet-ops itself. See docs/console.md.
 */
// A Map, not an object literal: `__proto__`, `constructor` or `toString` must find nothing, not Object's own.
const ASSETS = new Map<string, { type: string; body: Buffer }>([
  [
    'console.css',
    { type: 'text/css; charset=utf-8', body: readFileSync(new URL('./assets/console.css', import.meta.url)) },
  ],
  [
    'console.js',
    { type: 'text/javascript; charset=utf-8', body: readFileSync(new URL('./assets/console.js', import.meta.url)) },
  ],
]);

export function consoleRouter(deps: ConsoleDeps): Router {
  const credentials =
    deps.credentials ??
    new HeldCredentials({
      store: deps.readStore,
      key: deps.secretsKey,
      clock: deps.clock,
      logger: deps.logger,
      ...(deps.secretTtlMs === undefined ? {} : { ttlMs: deps.secretTtlMs }),
    });
  const backOffice = {
    store: deps.store,
    cache: deps.cache ?? new StateCache(),
    clock: deps.clock,
    assetScale: deps.assetScale,
    credentials,
    secretRotationOverlapHours: deps.secretRotationOverlapHours ?? DEFAULT_ROTATION_OVERLAP_HOURS,
    ...(deps.apiKeyEnvironment ? { apiKeyEnvironment: deps.apiKeyEnvironment } : {}),
    ...(deps.tracing ? { tracing: deps.tracing } : {}),
  };
  const services: ConsoleServices = {
    deps,
    backOffice,
    webhooks: {
      ...backOffice,
      secretsKey: deps.secretsKey,
      allowInsecureLocalhost: deps.webhookAllowInsecureLocalhost ?? false,
    },
    lookup: new PartyLookup(deps.store),
    sessions: new ConsoleSessions(deps.readStore, deps.clock, { ...DEFAULT_SESSION_TIMES, ...deps.sessionTimes }),
    throttle: new LoginThrottle(deps.readStore, deps.clock, { ...DEFAULT_THROTTLE, ...deps.throttle }),
    users: deps.users,
    secrets: credentials,
  };
  let collections: Promise<void> | undefined;

  const pages = Router();
  pages.use(securityHeaders);
  pages.get('/assets/:name', (req, res) => {
    const asset = ASSETS.get(String(req.params.name));
    if (!asset) throw new ConsoleError(404, 'No such file.');
    res.set('Cache-Control', 'public, max-age=300').type(asset.type).send(asset.body);
  });
  pages.use(async (_req, _res, next) => {
    await (collections ??= deps.readStore.defineCollections([
      SESSIONS_COLLECTION,
      LOGIN_ATTEMPTS_COLLECTION,
      SECRETS_COLLECTION,
      CONSOLE_OPERATIONS_COLLECTION,
      ...WEBHOOK_COLLECTIONS,
    ]));
    next();
  });
  // Form bodies on the console's own routes only; the API keeps its strict JSON parser.
  pages.use(express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 50 }));
  // Before login and sessions: no control character reaches a route, a lookup or a store.
  pages.use(refuseControlCharacters);
  loginRoutes(pages, services);
  waitingRoute(pages, services);
  pages.use(requireSession(services));
  logoutRoute(pages, services);
  // Also the gate that keeps a user with a temporary password on the password page.
  passwordRoutes(pages, services);
  dashboardRoute(pages, services);
  keyRoutes(pages, services);
  webhookRoutes(pages, services);
  operationRoutes(pages, services);
  operationFindRoutes(pages, services);
  adminRoutes(pages, services);
  userAdminRoutes(pages, services);
  pages.use(() => {
    throw new ConsoleError(404, 'There is no console page at this address.');
  });
  pages.use(consoleErrorHandler(services));

  const router = Router();
  // The server's root, where a newcomer looks first: the console (its login page says how to begin).
  router.get('/', (_req, res) => res.redirect(302, '/console/'));
  router.use('/console', pages);
  return router;
}
