import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runCliJson } from '../support/cli.ts';
import { startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';
import { CHECKER_PASSWORD, ConsoleClient, createCashIn, fund, MAKER_PASSWORD, newPhone } from './console-client.ts';

/**
 * Finding operations over HTTP: filters, search, the CSV export, the pages of an operation and of a key with
 * their timelines, the second question above CONSOLE_CONFIRM_ABOVE and bulk decisions, and a clear 400 (or
 * 404) for every malformed parameter.
 */
let sys: TestSystem;
let dist: TestParty;
let other: TestParty;
let keyID: string;
let apiKey: string;
let phoneA: string;
let phoneB: string;
const ops: Record<string, string> = {};

const ids = (html: string) => [...html.matchAll(/<tr data-operation-id="(op_[0-9a-f]+)"/g)].map((m) => m[1]);

async function as(email: string, password: string): Promise<ConsoleClient> {
  const client = new ConsoleClient(sys.baseUrl);
  await client.loginOk(email, password);
  return client;
}

const listed = async (operationID: string, status: string) =>
  waitFor(
    async () =>
      (await sys.system.stores.readStore.get<{ id: string; status: string }>('console_operations', operationID))
        ?.status === status,
    10_000,
  );

beforeAll(async () => {
  sys = await startTestSystem({ CONSOLE_CONFIRM_ABOVE: '500' });
  dist = await sys.party('distributor');
  other = await sys.party('distributor');
  phoneA = await sys.individual(newPhone(), 'Ada Obi');
  phoneB = await sys.individual(newPhone(), 'Bola Ade');
  await fund(sys, dist.ref, '100000');
  ({ keyID, apiKey } = await dist.key({ label: 'ERP integration' }));
  ops.rent = await createCashIn(sys, dist.ref.id, apiKey, phoneA, '120.00', 'Rent March');
  ops.school = await createCashIn(sys, dist.ref.id, apiKey, phoneB, '75.50', 'School fees');
  ops.formula = await createCashIn(sys, dist.ref.id, apiKey, phoneA, '10.00', '=HYPERLINK("x"), "quoted"');
  ops.big = await createCashIn(sys, dist.ref.id, apiKey, phoneB, '900.00', 'Large transfer');
  ops.wrong = await createCashIn(sys, dist.ref.id, apiKey, phoneA, '33.00', 'Typo');
  for (const id of Object.values(ops)) await listed(id, 'pending');
  const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
  await checker.get('/console/operations');
  expect(
    (await checker.post(`/console/operations/${ops.wrong}/reject`, { reason: 'Amount does not match the invoice' }))
      .status,
  ).toBe(303);
  await listed(ops.wrong!, 'rejected');
});

afterAll(async () => {
  await sys?.close();
});

describe('finding operations', () => {
  it('when a checker filters by status, amount range, counterparty and search, then only the matching operations are listed, with where the page is', async () => {
    const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    const all = await checker.get('/console/operations/history');
    expect(all.status).toBe(200);
    expect(ids(all.text)).toEqual([ops.wrong, ops.big, ops.formula, ops.school, ops.rent]);
    expect(all.text).toContain('1–5 of 5');
    expect(ids((await checker.get('/console/operations/history?order=oldest')).text)).toEqual([
      ops.rent,
      ops.school,
      ops.formula,
      ops.big,
      ops.wrong,
    ]);
    expect(ids((await checker.get('/console/operations/history?status=rejected')).text)).toEqual([ops.wrong]);
    // 75.50 < 100 < 120.00 < 900.00 as decimals, although "75.50" > "120.00" as strings.
    expect(ids((await checker.get('/console/operations/history?min=100&max=900')).text)).toEqual([ops.big, ops.rent]);
    expect(ids((await checker.get('/console/operations/history?max=80')).text)).toEqual([
      ops.wrong,
      ops.formula,
      ops.school,
    ]);
    expect(
      ids((await checker.get(`/console/operations/history?counterparty=${encodeURIComponent(phoneB)}`)).text),
    ).toEqual([ops.big, ops.school]);
    expect(ids((await checker.get('/console/operations/history?q=school')).text)).toEqual([ops.school]);
    expect(ids((await checker.get(`/console/operations/history?q=${ops.rent!.slice(0, 14)}`)).text)).toEqual([
      ops.rent,
    ]);
    expect(
      ids(
        (await checker.get(`/console/operations/history?q=${encodeURIComponent(phoneA.slice(0, 12))}&status=pending`))
          .text,
      ),
    ).toEqual([ops.formula, ops.rent]);
    expect(ids((await checker.get(`/console/operations/history?key=${keyID}&type=cash-in`)).text)).toHaveLength(5);
    const today = new Date().toISOString().slice(0, 10);
    expect(ids((await checker.get(`/console/operations/history?from=${today}&to=${today}`)).text)).toHaveLength(5);
    expect(ids((await checker.get('/console/operations/history?to=2000-01-01')).text)).toEqual([]);
    expect((await checker.get('/console/operations/history?q=nothing-like-this')).text).toContain(
      'No operation matches these filters.',
    );
  });

  it('when a filter parameter is malformed, then the page says which one with a 400, never a 500', async () => {
    const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    const cases: Array<[string, RegExp]> = [
      ['status=nope', /status must be one of/],
      ['type=steal', /type must be one of/],
      ['from=2025-02-30', /from date must be a day/],
      ['to=yesterday', /to date must be a day/],
      ['from=2025-03-02&to=2025-03-01', /from date must not be after/],
      ['min=abc', /minimum amount must be a decimal/],
      ['max=1.234', /more than 2 decimal places/],
      ['min=10&max=5', /minimum amount must not be above/],
      ['key=key_%27%3B--', /key must be an API key id/],
      ['counterparty=%3Cscript%3E', /counterparty must be a phone number/],
      ['order=sideways', /order must be newest or oldest/],
      ['after=2025-01-01', /page link is not one the console made/],
      ['status=pending&status=failed', /given more than once/],
      [`q=${'x'.repeat(150)}`, /search text is too long/],
    ];
    for (const [query, message] of cases) {
      const page = await checker.get(`/console/operations/history?${query}`);
      expect(page.status, query).toBe(400);
      expect(page.text, query).toMatch(message);
      expect((await checker.get(`/console/operations/export.csv?${query}`)).status, `export ${query}`).toBe(400);
    }
  });

  it('when the filtered list is exported, then the CSV has a header and exactly the matching rows, with formula-like cells defused and commas and quotes quoted', async () => {
    const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    const response = await checker.get(
      `/console/operations/export.csv?counterparty=${encodeURIComponent(phoneA)}&order=oldest`,
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(response.headers.get('content-disposition')).toMatch(
      /^attachment; filename="operations-\d{4}-\d{2}-\d{2}\.csv"$/,
    );
    expect(response.headers.get('cache-control')).toBe('no-store');
    const lines = response.text.trimEnd().split('\r\n');
    expect(lines[0]).toBe(
      'operationID,createdAt,updatedAt,operationType,status,amount,fee,counterpartyKind,counterparty,counterpartyName,memo,keyID,blockchainID,sequenceNumber,lastError',
    );
    expect(lines.slice(1).map((line) => line.slice(0, 35))).toEqual([ops.rent, ops.formula, ops.wrong]);
    const formula = lines.find((line) => line.startsWith(ops.formula!))!;
    expect(formula).toContain(`"'=HYPERLINK(""x""), ""quoted"""`);
    expect(formula).toContain(`,'${phoneA},`); // a phone starts with +: a spreadsheet would read it as a formula
    expect(lines.find((line) => line.startsWith(ops.wrong!))).toContain(',rejected,33.00,');
  });

  it('when another party’s user looks, then they find none of these operations, and their pages are 404', async () => {
    const rival = await as(other.checkerEmail, CHECKER_PASSWORD);
    expect(ids((await rival.get('/console/operations/history')).text)).toEqual([]);
    expect(ids((await rival.get(`/console/operations/history?q=${ops.rent}`)).text)).toEqual([]);
    expect((await rival.get(`/console/operations/export.csv?key=${keyID}`)).text.trimEnd().split('\r\n')).toHaveLength(
      1,
    );
    expect((await rival.get(`/console/operations/${ops.rent}`)).status).toBe(404);
    expect((await rival.get(`/console/keys/${keyID}`)).status).toBe(404);
    const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    for (const path of [
      '/console/operations/op_nothex',
      '/console/operations/op_00000000000000000000000000000000',
      '/console/keys/key_doesnotexist0000',
    ]) {
      expect((await checker.get(path)).status, path).toBe(404);
    }
    // A control character in the address is refused before any lookup (issue 40).
    expect((await checker.get('/console/keys/%00')).status).toBe(400);
  });
});

describe('an operation’s and a key’s pages', () => {
  it('when a checker opens a rejected operation, then it shows every field, the timeline with the maker’s key and the rejection’s reason and checker, and no ledger transaction', async () => {
    const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    const page = await checker.get(`/console/operations/${ops.wrong}`);
    expect(page.status).toBe(200);
    for (const text of ['Rejected', 'cash-in', '33.00', 'Ada Obi', phoneA, 'Typo', 'ERP integration', keyID])
      expect(page.text).toContain(text);
    const timeline = page.text.slice(page.text.indexOf('class="timeline"'));
    expect(timeline).toMatch(
      /Requested.*API key <a href="\/console\/keys\/[^"]+">ERP integration<\/a>.*requested by maker-/s,
    );
    expect(timeline).toContain(`requested by ${dist.makerEmail}`);
    expect(timeline).toMatch(
      new RegExp(
        `Rejected.*by <span class="actor-user">${dist.checkerEmail.replace('.', '\\.')}</span>.*Amount does not match the invoice`,
        's',
      ),
    );
    expect(page.text).toContain('No ledger transaction: the operation was rejected');
  });

  it('when a maker opens the key, then its terms, its timeline (requested by the maker, approved by the checker), its usage and the operations it created are shown', async () => {
    const maker = await as(dist.makerEmail, MAKER_PASSWORD);
    const page = await maker.get(`/console/keys/${keyID}`);
    expect(page.status).toBe(200);
    for (const text of ['ERP integration', 'Perform Operations', 'requests', 'All 5 operations of this key'])
      expect(page.text).toContain(text);
    expect(page.text).toMatch(
      new RegExp(`Requested.*by <span class="actor-user">${dist.makerEmail.replace('.', '\\.')}</span>`, 's'),
    );
    expect(page.text).toMatch(
      new RegExp(`Approved.*by <span class="actor-user">${dist.checkerEmail.replace('.', '\\.')}</span>`, 's'),
    );
    expect(ids(page.text)).toEqual([ops.wrong, ops.big, ops.formula, ops.school, ops.rent]);
  });

  it('when a key has been through a rejected and a withdrawn rotation, a rejected revocation and a revocation, then its timeline names each step in order, with who and why', async () => {
    const { keyID: retired } = await dist.key({ label: 'Old till' });
    const data = ['--data-dir', sys.config.DATA_DIR];
    const maker = ['--as', dist.makerEmail, ...data];
    const checker = ['--as', dist.checkerEmail, ...data];
    for (const step of [
      ['rotate', retired, '--reason', 'yearly rotation', ...maker],
      ['reject-rotation', retired, '--reason', 'not this week', ...checker],
      ['rotate', retired, '--reason', 'yearly rotation', ...maker],
      ['withdraw-rotation', retired, ...maker],
      ['revoke', retired, '--reason', 'till stolen', ...maker],
      ['reject-revocation', retired, '--reason', 'found behind the counter', ...checker],
      ['revoke', retired, '--reason', 'till retired', ...maker],
      ['approve-revocation', retired, ...checker],
    ])
      expect((await runCli(['key', ...step])).stderr).toBe('');

    const page = await (await as(dist.makerEmail, MAKER_PASSWORD)).get(`/console/keys/${retired}`);

    expect(page.status).toBe(200);
    const steps = [...page.text.matchAll(/<li data-event="([^"]+)">(.*?)<\/li>/gs)].map(([, what, body]) => ({
      what,
      by: /actor-user">([^<]+)</.exec(body!)?.[1],
      reason: /Reason: <q>([^<]*)<\/q>/.exec(body!)?.[1],
    }));
    expect(steps).toEqual([
      { what: 'Requested', by: dist.makerEmail, reason: undefined },
      { what: 'Approved', by: dist.checkerEmail, reason: undefined },
      { what: 'Secret rotation requested', by: dist.makerEmail, reason: 'yearly rotation' },
      { what: 'Secret rotation rejected', by: dist.checkerEmail, reason: 'not this week' },
      { what: 'Secret rotation requested', by: dist.makerEmail, reason: 'yearly rotation' },
      { what: 'Secret rotation withdrawn', by: dist.makerEmail, reason: undefined },
      { what: 'Revocation requested', by: dist.makerEmail, reason: 'till stolen' },
      { what: 'Revocation rejected', by: dist.checkerEmail, reason: 'found behind the counter' },
      { what: 'Revocation requested', by: dist.makerEmail, reason: 'till retired' },
      { what: 'Revoked', by: dist.checkerEmail, reason: undefined },
    ]);
  });

  it('when a checker rejects a key request in the console, then it is said so, and its timeline shows the rejection with the checker and the reason', async () => {
    const { keyID: refused } = await runCliJson<{ keyID: string }>([
      'key',
      'request',
      '--label',
      'Spare',
      '--permissions',
      'read-balance',
      '--as',
      dist.makerEmail,
      '--data-dir',
      sys.config.DATA_DIR,
    ]);
    const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    await checker.get('/console/keys?tab=pending');

    const rejected = await checker.post(`/console/keys/${refused}/reject`, { reason: 'no spare keys' });

    expect(rejected.status).toBe(303);
    expect(rejected.headers.get('location')).toBe('/console/keys?tab=inactive');
    expect((await checker.get('/console/keys?tab=inactive')).text).toContain(
      '<p class="notice ok" role="status" data-flash="ok">Key request “Spare” rejected.</p>',
    );
    const page = await checker.get(`/console/keys/${refused}`);
    expect(page.status).toBe(200);
    expect(page.text).toMatch(
      new RegExp(
        `<li data-event="Rejected">.*by <span class="actor-user">${dist.checkerEmail.replace('.', '\\.')}</span>` +
          '.*Reason: <q>no spare keys</q>',
        's',
      ),
    );
  });
});

describe('safer decisions', () => {
  it('when a checker approves an operation above CONSOLE_CONFIRM_ABOVE, then they are asked once more with amount, fee, payer and counterparty, and only the confirmation approves it', async () => {
    const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    await checker.get('/console/operations');
    const asked = await checker.post(`/console/operations/${ops.big}/approve`);
    expect(asked.status).toBe(200);
    for (const text of ['Confirm approval', 'above 500', '900.00', '0.00', dist.name, 'Bola Ade', 'Large transfer'])
      expect(asked.text).toContain(text);
    expect((await sys.system.stores.eventStore.readStream(`operation-${ops.big}`)).map((e) => e.type)).toEqual([
      'OperationRequested',
    ]);
    const confirmed = await checker.post(`/console/operations/${ops.big}/approve`, { confirm: 'yes' });
    expect(confirmed.status).toBe(303);
    expect((await sys.system.stores.eventStore.readStream(`operation-${ops.big}`)).map((e) => e.type)).toContain(
      'OperationApproved',
    );
  });

  it('when a checker bulk-approves several operations and one of them cannot be approved, then the others are approved and the refused one is named', async () => {
    const more = [];
    for (let i = 0; i < 3; i += 1)
      more.push(await createCashIn(sys, dist.ref.id, apiKey, phoneB, `${5 + i}.00`, `Bulk ${i}`));
    for (const id of more) await listed(id, 'pending');
    const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    await checker.get('/console/operations');
    const response = await checker.post('/console/operations/bulk', {
      action: 'approve',
      operationID: [more[0]!, ops.wrong!, more[1]!, more[2]!],
    });
    expect(response.status).toBe(303);
    const flash = (await checker.get('/console/operations')).text;
    expect(flash).toContain(`3 of 4 approved; not approved: ${ops.wrong}: This operation is rejected`);
    for (const id of more)
      expect((await sys.system.stores.eventStore.readStream(`operation-${id}`)).map((e) => e.type)).toContain(
        'OperationApproved',
      );
  });

  it('when a bulk rejection has no reason, then nothing is rejected; with one, each selected operation is rejected with it', async () => {
    const a = await createCashIn(sys, dist.ref.id, apiKey, phoneA, '1.00', 'Dup 1');
    const b = await createCashIn(sys, dist.ref.id, apiKey, phoneA, '2.00', 'Dup 2');
    const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    await checker.get('/console/operations');
    await checker.post('/console/operations/bulk', { action: 'reject', operationID: [a, b], reason: '' });
    expect((await checker.get('/console/operations')).text).toContain(
      'Give a reason for rejecting the selected operations. Nothing was rejected.',
    );
    await checker.post('/console/operations/bulk', { action: 'reject', operationID: [a, b], reason: 'Duplicates' });
    for (const id of [a, b]) {
      const events = await sys.system.stores.eventStore.readStream(`operation-${id}`);
      expect(events.at(-1)).toMatchObject({ type: 'OperationRejected', data: { reason: 'Duplicates' } });
    }
  });

  it('when a bulk approval includes an operation above the threshold, then the whole selection is shown for confirmation first; a maker is refused (403)', async () => {
    const small = await createCashIn(sys, dist.ref.id, apiKey, phoneA, '3.00', 'Small');
    const large = await createCashIn(sys, dist.ref.id, apiKey, phoneA, '600.00', 'Large');
    const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    await checker.get('/console/operations');
    const asked = await checker.post('/console/operations/bulk', { action: 'approve', operationID: [small, large] });
    expect(asked.status).toBe(200);
    expect(asked.text).toContain('Approve 2 operations');
    expect(asked.text).toContain('1 of these operations are above 500');
    expect((await sys.system.stores.eventStore.readStream(`operation-${small}`)).map((e) => e.type)).toEqual([
      'OperationRequested',
    ]);
    expect(
      (
        await checker.post('/console/operations/bulk', {
          action: 'approve',
          confirm: 'yes',
          operationID: [small, large],
        })
      ).status,
    ).toBe(303);
    for (const id of [small, large])
      expect((await sys.system.stores.eventStore.readStream(`operation-${id}`)).map((e) => e.type)).toContain(
        'OperationApproved',
      );
    const maker = await as(dist.makerEmail, MAKER_PASSWORD);
    await maker.get('/console/operations');
    expect((await maker.post('/console/operations/bulk', { action: 'approve', operationID: [small] })).status).toBe(
      403,
    );
    expect((await checker.post('/console/operations/bulk', { action: 'explode', operationID: [small] })).status).toBe(
      400,
    );
  });
});
