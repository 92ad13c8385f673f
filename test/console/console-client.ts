import { randomUUID } from 'node:crypto';
import { addUser, type BackOfficeDeps } from '../../src/commands/back-office.ts';
import { issueFloat } from '../../src/commands/channel-operations.ts';
import { PartyLookup } from '../../src/commands/party-lookup.ts';
import type { UserRole } from '../../src/domain/events.ts';
import type { PartyRef } from '../../src/domain/parties.ts';
import { call, waitFor, type TestSystem } from '../support/system.ts';

/**
 * A browser as far as the console's server sees one: a cookie jar, redirects not followed, and the Origin
 * header a browser puts on a form POST. Helpers read the CSRF token off the last page.
 */
export interface Page {
  status: number;
  headers: Headers;
  text: string;
  location: string | null;
}

export class ConsoleClient {
  readonly baseUrl: string;
  readonly defaults: { origin?: string; headers?: Record<string, string> };
  readonly cookies = new Map<string, string>();
  lastPage = '';

  constructor(baseUrl: string, defaults: { origin?: string; headers?: Record<string, string> } = {}) {
    this.baseUrl = baseUrl;
    this.defaults = defaults;
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<Page> {
    return this.request('GET', path, undefined, headers);
  }

  /** A form POST; `_csrf` is the last page's token unless the form says otherwise (null: none at all). */
  async post(
    path: string,
    form: Record<string, string | string[] | null | undefined> = {},
    headers: Record<string, string> = {},
  ): Promise<Page> {
    const { _csrf, ...rest } = form;
    const body = new URLSearchParams();
    const token = _csrf === undefined ? this.csrf() : _csrf;
    if (typeof token === 'string') body.append('_csrf', token);
    for (const [name, value] of Object.entries(rest)) {
      if (value === null || value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) body.append(name, v);
    }
    return this.request('POST', path, body.toString(), {
      'content-type': 'application/x-www-form-urlencoded',
      origin: this.defaults.origin ?? this.baseUrl,
      ...headers,
    });
  }

  csrf(): string | undefined {
    return /name="_csrf" value="([^"]+)"/.exec(this.lastPage)?.[1];
  }

  async login(email: string, password: string): Promise<Page> {
    await this.get('/console/login');
    return this.post('/console/login', { email, password });
  }

  /** Logs in and fails the test unless it worked. */
  async loginOk(email: string, password: string): Promise<void> {
    const page = await this.login(email, password);
    if (page.status !== 303 || page.location !== '/console/')
      throw new Error(`login of ${email} failed: ${page.status}\n${page.text}`);
    await this.get('/console/');
  }

  private async request(
    method: string,
    path: string,
    body: string | undefined,
    headers: Record<string, string>,
  ): Promise<Page> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      body,
      redirect: 'manual',
      headers: { ...this.defaults.headers, ...(cookie ? { cookie } : {}), ...headers },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired =
        attributes.some((a) => /^\s*max-age=0\s*$/i.test(a)) ||
        value === '' ||
        attributes.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a));
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await response.text();
    if (response.headers.get('content-type')?.startsWith('text/html')) this.lastPage = text;
    return { status: response.status, headers: response.headers, text, location: response.headers.get('location') };
  }
}

export const MAKER_PASSWORD = 'maker password 1';
export const CHECKER_PASSWORD = 'checker password 1';
export const OTHER_PASSWORD = 'other password 1';

const operator = () => ({ actor: 'operator:test', correlationId: randomUUID() });

/** A further console user: both roles (to show self-approval refused), or a platform administrator. */
export async function extraUser(
  backOffice: BackOfficeDeps,
  party: PartyRef | null,
  roles: UserRole[],
  prefix: string,
  exactEmail?: string,
): Promise<string> {
  const email = exactEmail ?? `${prefix}-${randomUUID().slice(0, 8)}@test.example`;
  await addUser(
    backOffice,
    { party, email, password: OTHER_PASSWORD, roles, platformAdmin: party === null },
    operator(),
  );
  return email;
}

/** E-money issued to a distributor's float, executed by the running executor; waits for the balance. */
export async function fund(sys: TestSystem, distributor: PartyRef, amount: string): Promise<void> {
  const deps = {
    store: sys.system.stores.eventStore,
    lookup: new PartyLookup(sys.system.stores.eventStore),
    clock: () => new Date(),
    assetScale: sys.config.ASSET_SCALE,
  };
  await issueFloat(deps, { to: distributor, amount }, operator());
  await waitFor(async () => {
    const doc = await sys.system.stores.readStore.get('balances', `distributor:${distributor.id}`);
    return doc !== null;
  }, 10_000);
}

/** Creates a cash-in through the API with the key; returns its operationID. */
export async function createCashIn(
  sys: TestSystem,
  distributorID: string,
  apiKey: string,
  phoneTo: string,
  amount: string,
  memo: string,
): Promise<string> {
  const response = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${distributorID}/operations`, {
    apiKey,
    body: { operationType: 'cash-in', amount, phoneTo, memo },
  });
  if (response.status !== 200) throw new Error(`cash-in refused: ${JSON.stringify(response.body)}`);
  return response.body.operationID as string;
}

/** Waits until the read model lists the operation with the given status. */
export async function waitForStatus(
  sys: TestSystem,
  operationID: string,
  status: string,
  timeoutMs = 10_000,
): Promise<void> {
  await waitFor(
    async () => (await sys.system.stores.readStore.get('distributor_operations', operationID))?.status === status,
    timeoutMs,
  );
}

let phoneSeq = 0;
export const newPhone = () => `+2348124${String(100_000 + Math.floor(Math.random() * 800_000) + phoneSeq++)}`;
