import type { Router } from 'express';
import { getBalance } from '../projections/balances-queries.ts';
import { webhookEndpointsOfParty } from '../projections/webhook-endpoints-queries.ts';
import { BALANCES_PROJECTION } from '../projections/balances.ts';
import { untilReadable, viewer, type ConsoleServices } from './context.ts';
import { html } from '../http/html.ts';
import { money } from './format.ts';
import { countPending } from './party-operations.ts';
import { renderPage } from './render.ts';

/** The first page after login: the party, its balance from the balances read model, and what waits for the viewer. */
export function dashboardRoute(router: Router, services: ConsoleServices): void {
  const { readStore, directory, clock, assetScale } = services.deps;

  router.get('/', async (_req, res) => {
    const { user } = viewer(res);
    if (!user.party) {
      await renderPage(services, res, {
        title: 'Dashboard',
        section: 'dashboard',
        body: html`<h1>Platform administration</h1>
          <p>You are a platform administrator: you belong to no party, so you see no keys, balances or operations.</p>
          <p>You onboard parties and manage console users. Every change that grants or widens someone’s access takes
          effect
            only when another administrator approves it.</p>
          <p><a class="button" href="/console/admin">Onboard parties and request users</a> <a class="button secondary"
            href="/console/admin/users">Users</a>
            <a class="button secondary" href="/console/admin/access">Access requests</a></p>`,
      });
      return;
    }
    const party = user.party;
    const info = await services.lookup.party(party);
    await untilReadable(services, party, BALANCES_PROJECTION);
    const { balance } = await getBalance(readStore, { kind: party.type, id: party.id }, assetScale);
    const pendingOperations = await countPending(services, party);
    const keys = directory.listByParty(party, clock().toISOString());
    const pendingKeys = keys.filter((k) => k.state === 'pending' || k.state === 'revocation_pending').length;
    const activeKeys = keys.filter((k) => k.state === 'active' || k.state === 'revocation_pending').length;
    const checker = user.roles.includes('checker');
    const endpoints = await webhookEndpointsOfParty(readStore, party);
    const activeEndpoints = endpoints.filter((e) => e.status === 'active').length;
    const pendingEndpoints = endpoints.filter((e) => e.status === 'pending').length;
    const failedEndpoints = endpoints.filter((e) => e.status === 'disabled' && e.disabledBy === 'system').length;
    await renderPage(services, res, {
      title: 'Dashboard',
      section: 'dashboard',
      body: html`<h1>${info?.name ?? 'Your party'}</h1>
        <p class="muted">${
          party.type === 'distributor' ? 'Distributor' : 'Merchant'
        } · short code ${info?.shortCode ?? ''} · id <code>${party.id}</code></p>
        <div class="cards">
          <section class="card" aria-labelledby="balance-title"><h2 id="balance-title">Balance</h2>
            <p class="big" data-balance>${money(balance, services.deps.assetCode ?? 'NGN')}</p>
            <p class="hint">Executed operations only; pending ones are not counted yet.</p></section>
          <section class="card" aria-labelledby="ops-title"><h2 id="ops-title">Operations</h2>
            <p class="big">${pendingOperations}</p>
            <p>${
              checker ? 'waiting for your approval' : 'waiting for a checker'
            } · <a href="/console/operations">${checker ? 'Review' : 'View'}</a></p></section>
          <section class="card" aria-labelledby="keys-title"><h2 id="keys-title">API keys</h2>
            <p class="big">${activeKeys}</p>
            <p>active · ${pendingKeys} request${
              pendingKeys === 1 ? '' : 's'
            } pending · <a href="/console/keys">Manage</a></p></section>
          <section class="card" aria-labelledby="webhooks-title"><h2 id="webhooks-title">Webhook endpoints</h2>
            <p class="big">${activeEndpoints}</p>
            <p>active · ${pendingEndpoints} awaiting approval · <a href="/console/webhooks">Manage</a></p>
            ${
              failedEndpoints > 0
                ? html`<p class="error-text"
                    data-system-disabled>${failedEndpoints} disabled automatically after a day of failed deliveries</p>`
                : ''
            }</section>
        </div>`,
    });
  });
}
