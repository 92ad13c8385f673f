import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestSystem, WITHOUT_EXECUTOR, type TestParty, type TestSystem } from '../support/system.ts';
import { ConsoleClient, extraUser, OTHER_PASSWORD } from '../console/console-client.ts';

/**
 * Issue 40: no control character reaches a store. NUL and the other C0 controls, DEL and C1 controls are sent to
 * every GET list and search of the read API, every create of the write API, and every console filter and form;
 * each answer is a 400 (a validation problem, or the console's "Check the form" page), never a 500 and never a
 * 200, on the embedded stores and on PostgreSQL alike (which cannot hold U+0000 and answered 500 before).
 *
 * The console's routes are read from the running app, so that a form added later without a row here fails.
 */
const C0 = Array.from({ length: 0x20 }, (_, i) => String.fromCodePoint(i));
const CONTROLS = [...C0, '\u007f', '\u0080', '\u0085', '\u009b', '\u009f'];
const NOT_WHITESPACE = CONTROLS.filter((c) => !'\t\n\r'.includes(c));
/** Sent through every route's first parameter or field (every control goes through the routes the issue names). */
const SAMPLE = ['\u0000', '\u0001', '\t', '\r', '\u000b', '\u001b', '\u007f', '\u009b'];
const SAMPLE_NOT_WHITESPACE = SAMPLE.filter((c) => !'\t\n\r'.includes(c));
const q = encodeURIComponent;

/** What each console route reads: its query parameters (GET) or its form fields (POST), and who may use it. */
interface ConsoleRoute {
  names: string[];
  as: 'party' | 'admin' | 'nobody';
}
const FILTERS = ['status', 'type', 'key', 'counterparty', 'from', 'to', 'min', 'max', 'q', 'order', 'after', 'before'];
const CONSOLE_ROUTES: Record<string, ConsoleRoute | 'static'> = {
  // A file of the console's own, looked up in a Map: nothing a person sends reaches a store.
  'GET /assets/:name': 'static',
  'GET /login': { names: ['next', 'ended', 'out'], as: 'nobody' },
  // The password is not read by the guard: it is hashed, never stored or shown (docs/integrating.md).
  'POST /login': { names: ['email', 'next', '_csrf'], as: 'nobody' },
  'GET /waiting': { names: ['any'], as: 'party' },
  'POST /logout': { names: ['_csrf'], as: 'party' },
  'GET /password': { names: ['any'], as: 'party' },
  'POST /password': { names: ['_csrf'], as: 'party' },
  'GET /': { names: ['any'], as: 'party' },
  'GET /keys': { names: ['tab'], as: 'party' },
  'GET /keys/new': { names: ['any'], as: 'party' },
  'POST /keys': {
    names: ['label', 'permissions', 'maxTransactionAmount', 'maxDailyVolume', 'allowedIPs', 'expiresInDays'],
    as: 'party',
  },
  'POST /keys/:keyID/approve': { names: ['_csrf'], as: 'party' },
  'POST /keys/:keyID/reject': { names: ['reason'], as: 'party' },
  'POST /keys/:keyID/withdraw': { names: ['_csrf'], as: 'party' },
  'POST /keys/:keyID/revocation/approve': { names: ['_csrf'], as: 'party' },
  'POST /keys/:keyID/revocation/reject': { names: ['reason'], as: 'party' },
  'POST /keys/:keyID/rotation/approve': { names: ['_csrf'], as: 'party' },
  'POST /keys/:keyID/rotation/reject': { names: ['reason'], as: 'party' },
  'POST /keys/:keyID/rotation/withdraw': { names: ['_csrf'], as: 'party' },
  'GET /keys/:keyID/rotate': { names: ['any'], as: 'party' },
  'POST /keys/:keyID/rotate': { names: ['reason'], as: 'party' },
  'GET /keys/:keyID/revoke': { names: ['any'], as: 'party' },
  'POST /keys/:keyID/revoke': { names: ['reason'], as: 'party' },
  'GET /webhooks': { names: ['any'], as: 'party' },
  'GET /webhooks/new': { names: ['any'], as: 'party' },
  'POST /webhooks': { names: ['url', 'eventTypes'], as: 'party' },
  'GET /webhooks/:endpointID': { names: ['offset'], as: 'party' },
  'POST /webhooks/:endpointID/approve': { names: ['_csrf'], as: 'party' },
  'POST /webhooks/:endpointID/reject': { names: ['reason'], as: 'party' },
  'GET /webhooks/:endpointID/rotate': { names: ['any'], as: 'party' },
  'POST /webhooks/:endpointID/rotate': { names: ['reason'], as: 'party' },
  'POST /webhooks/:endpointID/rotation/approve': { names: ['_csrf'], as: 'party' },
  'POST /webhooks/:endpointID/rotation/reject': { names: ['reason'], as: 'party' },
  'POST /webhooks/:endpointID/rotation/withdraw': { names: ['_csrf'], as: 'party' },
  'GET /webhooks/:endpointID/disable': { names: ['any'], as: 'party' },
  'POST /webhooks/:endpointID/disable': { names: ['reason'], as: 'party' },
  'POST /webhooks/:endpointID/redeliver': { names: ['since'], as: 'party' },
  'GET /webhooks/:endpointID/deliveries/:eventID': { names: ['any'], as: 'party' },
  'POST /webhooks/:endpointID/deliveries/:eventID/redeliver': { names: ['from'], as: 'party' },
  'GET /operations': { names: ['any'], as: 'party' },
  'POST /operations/:operationID/approve': { names: ['confirm'], as: 'party' },
  'POST /operations/bulk': { names: ['action', 'operationID', 'reason', 'confirm'], as: 'party' },
  'GET /operations/:operationID/reject': { names: ['any'], as: 'party' },
  'POST /operations/:operationID/reject': { names: ['reason'], as: 'party' },
  'GET /operations/history': { names: FILTERS, as: 'party' },
  'GET /operations/export.csv': { names: FILTERS, as: 'party' },
  'GET /operations/:operationID': { names: ['any'], as: 'party' },
  'GET /keys/:keyID': { names: ['any'], as: 'party' },
  'GET /admin': { names: ['any'], as: 'admin' },
  'POST /admin/parties': { names: ['partyType', 'name', 'shortCode'], as: 'admin' },
  'POST /admin/individuals': { names: ['phone', 'name'], as: 'admin' },
  'POST /admin/users': { names: ['partyType', 'shortCode', 'email', 'roles', 'reason'], as: 'admin' },
  'GET /admin/parties': { names: ['q'], as: 'admin' },
  'GET /admin/users': { names: ['q', 'party'], as: 'admin' },
  'GET /admin/users/:userID': { names: ['any'], as: 'admin' },
  'POST /admin/users/:userID/disable': { names: ['reason'], as: 'admin' },
  'POST /admin/users/:userID/roles/remove': { names: ['role'], as: 'admin' },
  'POST /admin/users/:userID/enable': { names: ['reason'], as: 'admin' },
  'POST /admin/users/:userID/roles/add': { names: ['role', 'reason'], as: 'admin' },
  'POST /admin/users/:userID/reset-password': { names: ['reason'], as: 'admin' },
  'GET /admin/access': { names: ['tab'], as: 'admin' },
  'POST /admin/access/:requestID/approve': { names: ['_csrf'], as: 'admin' },
  'POST /admin/access/:requestID/reject': { names: ['reason'], as: 'admin' },
};

type Layer = { route?: { path: string; methods: Record<string, boolean> }; handle?: { stack?: Layer[] } };

/** The app's routes as `METHOD path`, the console's (mounted at /console) apart from the API's. */
function routesOf(app: unknown): { console: string[]; api: string[] } {
  const found = { console: [] as string[], api: [] as string[] };
  const walk = (stack: Layer[]) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const method of Object.keys(layer.route.methods)) {
          const route = `${method.toUpperCase()} ${layer.route.path}`;
          if (layer.route.path.startsWith('/api/v1/') && layer.route.path.includes(':')) found.api.push(route);
          else if (!/^\/(api|health|ready|metrics)\b/.test(layer.route.path)) found.console.push(route);
        }
      } else if (layer.handle?.stack) walk(layer.handle.stack);
    }
  };
  walk((app as { router: { stack: Layer[] } }).router.stack);
  return found;
}

export function controlCharactersEndToEnd(): void {
  let sys: TestSystem;
  let distributor: TestParty;
  let merchant: TestParty;
  let distributorKey: string;
  let merchantKey: string;
  let party: ConsoleClient;
  let admin: ConsoleClient;
  let partyToken: string;
  let adminToken: string;
  const ids: Record<string, string> = {
    keyID: 'key_AbC123dEf456GhIj',
    endpointID: 'whe_0123456789abcdef0123456789abcdef',
    eventID: 'evt_0123456789abcdef',
    operationID: `op_${'0'.repeat(32)}`,
    userID: 'usr_0123456789abcdef',
    requestID: 'acr_0123456789abcdef',
    name: 'console.css',
  };

  beforeAll(async () => {
    sys = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
    distributor = await sys.party('distributor');
    merchant = await sys.party('merchant');
    distributorKey = (await distributor.key()).apiKey;
    merchantKey = (await merchant.key()).apiKey;
    const both = await extraUser(sys.backOffice, distributor.ref, ['maker', 'checker'], 'both');
    const administrator = await extraUser(sys.backOffice, null, [], 'admin');
    party = new ConsoleClient(sys.baseUrl);
    await party.loginOk(both, OTHER_PASSWORD);
    partyToken = party.csrf()!;
    admin = new ConsoleClient(sys.baseUrl);
    await admin.loginOk(administrator, OTHER_PASSWORD);
    adminToken = admin.csrf()!;
  });

  afterAll(async () => {
    await sys?.close();
  });

  describe('the read API', () => {
    const ITEM_ID = 'op_00000000-0000-4000-8000-000000000000';
    const lists = () => [
      {
        path: `/api/v1/distributors/${distributor.ref.id}/operations`,
        key: distributorKey,
        params: ['limit', 'offset', 'status', 'createdFrom', 'createdTo'],
      },
      {
        path: `/api/v1/merchants/${merchant.ref.id}/operations`,
        key: merchantKey,
        params: ['limit', 'offset', 'status', 'createdFrom', 'createdTo'],
      },
      {
        path: `/api/v1/merchants/${merchant.ref.id}/payments`,
        key: merchantKey,
        params: ['search', 'limit', 'offset', 'createdFrom', 'createdTo'],
      },
      // One item by id (an extension): no parameter at all.
      {
        path: `/api/v1/distributors/${distributor.ref.id}/operations/${ITEM_ID}`,
        key: distributorKey,
        params: ['limit'],
      },
      { path: `/api/v1/merchants/${merchant.ref.id}/operations/${ITEM_ID}`, key: merchantKey, params: ['limit'] },
      { path: `/api/v1/merchants/${merchant.ref.id}/payments/${ITEM_ID}`, key: merchantKey, params: ['limit'] },
      // No parameter at all: any is refused, a control character with it.
      { path: `/api/v1/distributors/${distributor.ref.id}/balance`, key: distributorKey, params: ['limit'] },
      { path: `/api/v1/merchants/${merchant.ref.id}/balance`, key: merchantKey, params: ['limit'] },
    ];

    it('then the lists are every GET of a party the API serves', () => {
      const served = routesOf(sys.system.app).api.filter((route) => route.startsWith('GET '));
      const tested = lists().map(
        ({ path }) =>
          `GET ${path.replace(distributor.ref.id, ':distributorID').replace(merchant.ref.id, ':merchantID').replace(ITEM_ID, ':operationID')}`,
      );
      expect(new Set(tested)).toEqual(new Set(served));
    });

    it('when a search holds a phone or a memo fragment, then it answers 200 (what the refusals below are measured against)', async () => {
      const response = await call(
        sys.baseUrl,
        'GET',
        `/api/v1/merchants/${merchant.ref.id}/payments?search=${q('+234 rent')}`,
        { apiKey: merchantKey },
      );
      expect(response.status).toBe(200);
    });

    it('when any list or search parameter holds a control character (alone, inside, or at an end), then it answers 400 with a validation problem naming it', async () => {
      for (const { path, key, params } of lists()) {
        for (const param of params) {
          for (const control of param === 'search' ? CONTROLS : SAMPLE) {
            for (const value of [control, `12${control}`, `${control}rent`]) {
              const response = await call(sys.baseUrl, 'GET', `${path}?${param}=${q(value)}`, { apiKey: key });
              const what = `${path}?${param}=${JSON.stringify(value)}`;
              expect(response.status, what).toBe(400);
              expect(response.headers.get('content-type'), what).toMatch(/^application\/problem\+json/);
              expect(response.body.type, what).toBe('/problems/input-validation-problems');
              expect(
                response.body.errors.map((e: { field: string }) => e.field),
                what,
              ).toEqual([param]);
            }
          }
        }
      }
    });

    it('when the search holds a control character, then the problem says which and where', async () => {
      const response = await call(
        sys.baseUrl,
        'GET',
        `/api/v1/merchants/${merchant.ref.id}/payments?search=${q('rent\u0000')}`,
        { apiKey: merchantKey },
      );
      expect(response.body.errors).toEqual([
        expect.objectContaining({
          field: 'search',
          detail: 'search must not contain control characters (U+0000 at character 5)',
        }),
      ]);
    });
  });

  describe('the write API', () => {
    const cashIn = { operationType: 'cash-in', amount: '10.00', phoneTo: '+2348123456781', memo: 'rent' };
    const cashOut = {
      operationType: 'cash-out-fulfillment',
      amount: '10.00',
      phoneFrom: '+2348123456781',
      cashOutFulfillmentType: 'cash',
      cashOutFulfillmentID: 'RCPT-1',
    };
    const bodies: Array<[string, Record<string, string>, string]> = [
      ['distributor', cashIn, 'memo'],
      ['distributor', cashIn, 'phoneTo'],
      ['distributor', cashIn, 'amount'],
      ['distributor', cashIn, 'operationType'],
      ['distributor', { ...cashIn, phoneTo: undefined!, merchantToShortCode: '12' }, 'merchantToShortCode'],
      ['distributor', cashOut, 'cashOutFulfillmentID'],
      ['distributor', cashOut, 'phoneFrom'],
      ['distributor', { ...cashOut, authorizationCode: '12345678' }, 'authorizationCode'],
      [
        'merchant',
        { operationType: 'cash-out', amount: '1.00', distributorToShortCode: '12', memo: 'for goods' },
        'distributorToShortCode',
      ],
      [
        'merchant',
        { operationType: 'pay-merchant', amount: '1.00', merchantToShortCode: '12', memo: 'for goods' },
        'memo',
      ],
      [
        'merchant',
        { operationType: 'pay-individual', amount: '1.00', phoneTo: '+2348123456781', memo: 'for goods' },
        'phoneTo',
      ],
    ];

    it("when a create's text field holds a control character (inside, or at an end other than a tab or line break), then it answers 400 naming the field", async () => {
      for (const [partyType, body, field] of bodies) {
        const [id, key] =
          partyType === 'distributor' ? [distributor.ref.id, distributorKey] : [merchant.ref.id, merchantKey];
        const [inside, atEnd] = field === 'memo' ? [CONTROLS, NOT_WHITESPACE] : [SAMPLE, SAMPLE_NOT_WHITESPACE];
        const values = [
          ...inside.map((c) => `${String(body[field]).slice(0, 1)}${c}${String(body[field]).slice(1)}`),
          ...atEnd.map((c) => `${body[field]}${c}`),
        ];
        for (const value of values) {
          const response = await call(sys.baseUrl, 'POST', `/api/v1/${partyType}s/${id}/operations`, {
            apiKey: key,
            body: { ...body, [field]: value },
          });
          const what = `${partyType} ${field}=${JSON.stringify(value)}`;
          expect(response.status, what).toBe(400);
          expect(response.body.type, what).toBe('/problems/input-validation-problems');
          expect(
            response.body.errors.map((e: { field: string }) => e.field),
            what,
          ).toContain(field);
        }
      }
    });

    it('when the Idempotency-Key holds a tab (the one control a header may carry), then it answers 400 naming it', async () => {
      const response = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${distributor.ref.id}/operations`, {
        apiKey: distributorKey,
        body: cashIn,
        headers: { 'idempotency-key': 'abc\tdef' },
      });
      expect(response.status).toBe(400);
      expect(response.body.errors).toEqual([expect.objectContaining({ field: 'Idempotency-Key' })]);
    });
  });

  describe('the console', () => {
    const refused = (page: { status: number; text: string }, what: string) => {
      expect(page.status, what).toBe(400);
      expect(page.text, what).toContain('Check the form');
      expect(page.text, what).toMatch(/holds a control character \(U\+[0-9A-F]{4} at character \d+\)/);
    };
    const clientFor = (as: ConsoleRoute['as']) =>
      as === 'admin' ? admin : as === 'party' ? party : new ConsoleClient(sys.baseUrl);
    const tokenFor = (as: ConsoleRoute['as']) =>
      as === 'admin' ? adminToken : as === 'party' ? partyToken : 'no-session-token';
    const pathOf = (route: string, param = (name: string) => ids[name]!) =>
      `/console${route.slice(route.indexOf(' ') + 1).replace(/:(\w+)/g, (_m, name: string) => q(param(name)))}`.replace(
        /\/$/,
        '/',
      );

    it('then every route the console serves has its row here', () => {
      const served = routesOf(sys.system.app).console;
      expect(served.length).toBeGreaterThan(50);
      expect(served.filter((route) => !(route in CONSOLE_ROUTES))).toEqual([]);
      expect(Object.keys(CONSOLE_ROUTES).filter((route) => !served.includes(route))).toEqual([]);
    });

    it('when the operations history is searched for a memo, then it answers 200 (what the refusals below are measured against)', async () => {
      expect((await party.get(`/console/operations/history?q=${q('rent')}`)).status).toBe(200);
      expect((await admin.get(`/console/admin/users?q=${q('maker')}`)).status).toBe(200);
    });

    it('when any filter of a GET page holds a control character, then the page answers 400 saying so', async () => {
      for (const [route, spec] of Object.entries(CONSOLE_ROUTES)) {
        if (spec === 'static' || !route.startsWith('GET ')) continue;
        const client = clientFor(spec.as);
        for (const [i, name] of spec.names.entries()) {
          // Every control through the history's search (the issue's), a sample through each page's first parameter, NUL through every one.
          const sweep = route === 'GET /operations/history' && name === 'q' ? CONTROLS : i === 0 ? SAMPLE : ['\u0000'];
          const values = [...sweep, ...sweep.map((c) => `ab${c}`)];
          for (const value of values)
            refused(
              await client.get(`${pathOf(route)}?${name}=${q(value)}`),
              `${route}?${name}=${JSON.stringify(value)}`,
            );
        }
      }
    });

    it("when a page's address holds a control character in its id, then it answers 400 saying so", async () => {
      for (const [route, spec] of Object.entries(CONSOLE_ROUTES)) {
        if (spec === 'static' || !route.includes(':')) continue;
        const client = clientFor(spec.as);
        for (const control of ['\u0000', '\u0001', '\n', '\u007f', '\u0085']) {
          const path = pathOf(route, (name) => `${ids[name]}${control}`);
          const page = route.startsWith('GET ')
            ? await client.get(path)
            : await client.post(path, { _csrf: tokenFor(spec.as) });
          refused(page, `${route} ${JSON.stringify(control)}`);
        }
      }
    });

    it('when any field of a form holds a control character (inside, or at an end other than a tab or line break), then the form answers 400 saying so', async () => {
      for (const [route, spec] of Object.entries(CONSOLE_ROUTES)) {
        if (spec === 'static' || !route.startsWith('POST ')) continue;
        const client = clientFor(spec.as);
        if (spec.as === 'nobody') await client.get('/console/login');
        for (const [i, name] of spec.names.entries()) {
          // Every control through the key request's label, a sample through each form's first field, NUL and a line break through every one.
          const [inside, atEnd] =
            route === 'POST /keys' && name === 'label'
              ? [CONTROLS, NOT_WHITESPACE]
              : i === 0
                ? [SAMPLE, SAMPLE_NOT_WHITESPACE]
                : [['\u0000', '\n'], ['\u0000']];
          const values = [...inside.map((c) => `ab${c}cd`), ...atEnd.map((c) => `${c}abc`)];
          for (const value of values) {
            const token = spec.as === 'nobody' ? client.csrf()! : tokenFor(spec.as);
            const form = name === '_csrf' ? { _csrf: `${token}${value}` } : { _csrf: token, [name]: value };
            refused(await client.post(pathOf(route), form), `${route} ${name}=${JSON.stringify(value)}`);
          }
        }
      }
    });

    it('when a form field holds a control character, then the page names the field, the character and where', async () => {
      const page = await party.post('/console/keys', { _csrf: partyToken, label: 'ERP\u0000 key' });
      expect(page.status).toBe(400);
      expect(page.text).toContain('The field “label” holds a control character (U+0000 at character 4)');
    });

    it("when a form value only ends with a line break (pasted), then the guard lets it through to the field's own rule", async () => {
      const page = await admin.post('/console/admin/individuals', {
        _csrf: adminToken,
        phone: '+2348123456799\r\n',
        name: 'Pasted Name\n',
      });
      expect(page.status).toBe(303);
    });
  });
}
