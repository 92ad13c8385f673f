import { html, seg, type Html } from '../http/html.ts';
import type { PartyWithUsers } from '../projections/user-directory.ts';

/** Parties (platform administrators): every distributor and merchant, searchable, with its users' count. */
export interface PartiesView {
  parties: PartyWithUsers[];
  query: string;
  total: number;
}

export function searchForm(action: string, label: string, hint: string, query: string): Html {
  return html`<form method="get" action="${action}" class="search" role="search">
    <div class="field"><label for="q">${label}</label>
      <p class="hint" id="q-hint">${hint}</p>
      <input id="q" name="q" type="search" value="${query}" maxlength="200" aria-describedby="q-hint"></div>
    <button type="submit">Search</button>${query ? html` <a href="${action}">Clear</a>` : ''}
  </form>`;
}

export function partiesPage(view: PartiesView): Html {
  const table =
    view.parties.length === 0
      ? html`<p class="empty">${view.query ? 'No party matches.' : 'No party yet.'}</p>`
      : html`<table>
      <caption class="visually-hidden">Parties</caption>
      <thead><tr><th scope="col">Party</th><th scope="col">Type</th><th scope="col">Short code</th>
      <th scope="col">Users</th><th scope="col">Actions</th></tr></thead>
      <tbody>${view.parties.map((party) => {
        const active = party.users.filter((u) => u.status === 'active').length;
        return html`<tr data-party="${party.type}:${party.id}">
          <th scope="row">${party.name}<br><code class="muted">${party.id}</code></th>
          <td data-label="Type">${party.type === 'distributor' ? 'Distributor' : 'Merchant'}</td>
          <td data-label="Short code">${party.shortCode}</td>
          <td data-label="Users">${String(party.users.length)}${
            party.users.length > active
              ? html` <span class="muted">(${String(party.users.length - active)} disabled)</span>`
              : ''
          }</td>
          <td class="actions" data-label="Actions">
          <a href="/console/admin/users?party=${party.type}:${seg(party.id)}">Users of ${party.name}</a></td>
        </tr>`;
      })}</tbody></table>`;
  return html`<div class="page-head"><h1>Parties</h1>
    <a class="button" href="/console/admin#party-title">Onboard a party</a></div>
    ${searchForm('/console/admin/parties', 'Find a party', 'Part of a name or a short code.', view.query)}
    <section aria-labelledby="parties-title">
    <h2 id="parties-title">${
      view.query
        ? `${view.parties.length} of ${view.total} parties`
        : `${view.total} ${view.total === 1 ? 'party' : 'parties'}`
    }</h2>${table}</section>`;
}
