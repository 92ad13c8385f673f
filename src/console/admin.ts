import type { Request, Response, Router } from 'express';
import { onboardParty, registerIndividual } from '../commands/back-office.ts';
import { requestAccessChange } from '../commands/user-admin.ts';
import { DomainError, invalidInput } from '../domain/errors.ts';
import type { PartyRef } from '../domain/parties.ts';
import { shortCode as parseShortCode } from '../domain/text.ts';
import { commandContext, field, fields, requireAdmin, viewer, type ConsoleServices, sentence } from './context.ts';
import { html, type Html } from '../http/html.ts';
import { csrfField } from './layout.ts';
import { redirectWith, renderPage } from './render.ts';
import type { SessionDoc } from './sessions.ts';

/**
 * Platform administrators set up parties without a terminal: the same back-office commands as the CLI's
 * `party add-*`. A console user is not added at once but requested: another administrator approves it on
 * the Access requests page (src/console/access-requests.ts). A refusal is shown next to the field it names,
 * in the form that was sent.
 */
type FormName = 'party' | 'individual' | 'user';

interface FormState {
  form: FormName;
  values: Record<string, string | string[]>;
  errors: Record<string, string>;
}

function input(
  state: FormState | null,
  form: FormName,
  name: string,
  label: string,
  options: { type?: string; autocomplete?: string; hint?: string } = {},
): Html {
  const mine = state?.form === form ? state : null;
  const id = `${form}-${name}`;
  const error = mine?.errors[name];
  const value = options.type === 'password' ? '' : String(mine?.values[name] ?? '');
  const describedBy = [options.hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return html`<div class="field${error ? ' invalid' : ''}">
    <label for="${id}">${label}</label>
    ${options.hint ? html`<p class="hint" id="${id}-hint">${options.hint}</p>` : ''}
    ${error ? html`<p class="field-error" id="${id}-error">${error}</p>` : ''}
    <input id="${id}" name="${name}" type="${options.type ?? 'text'}" value="${value}"
      autocomplete="${options.autocomplete ?? 'off'}"${
        describedBy ? html` aria-describedby="${describedBy}"` : ''
      }${error ? html` aria-invalid="true"` : ''}>
  </div>`;
}

function partyTypeSelect(state: FormState | null, form: FormName, withAdmin: boolean): Html {
  const chosen = state?.form === form ? String(state.values.partyType ?? '') : '';
  const options: Array<[string, string]> = [
    ['distributor', 'Distributor'],
    ['merchant', 'Merchant'],
    ...(withAdmin ? [['platform', 'Platform administrator (no party)'] as [string, string]] : []),
  ];
  return html`<div class="field"><label for="${form}-partyType">${withAdmin ? 'Belongs to' : 'Type'}</label>
    <select id="${form}-partyType" name="partyType">
    ${options.map(
      ([value, label]) => html`<option value="${value}"${value === chosen ? html` selected` : ''}>${label}</option>`,
    )}</select></div>`;
}

function adminPage(session: SessionDoc, state: FormState | null): Html {
  const roles = state?.form === 'user' ? ((state.values.roles as string[] | undefined) ?? []) : [];
  const rolesError = state?.form === 'user' ? state.errors.roles : undefined;
  return html`<h1>Administration</h1>
    <p>Set up distributors, merchants and individuals, and request console users. A new user, like every change that
      widens someone’s access, takes effect only when another administrator approves it.</p>
    <div class="cards align-start">
    <section class="card" aria-labelledby="party-title"><h2 id="party-title">Onboard a distributor or merchant</h2>
      <form method="post" action="/console/admin/parties" class="stack">${csrfField(session)}
        ${partyTypeSelect(state, 'party', false)}
        ${input(state, 'party', 'name', 'Name')}
        ${input(state, 'party', 'shortCode', 'Short code', {
          hint: '1 to 9 digits, not starting with 0; unique per type.',
        })}
        <button type="submit">Onboard</button></form></section>
    <section class="card" aria-labelledby="individual-title"><h2 id="individual-title">Register an individual</h2>
      <form method="post" action="/console/admin/individuals" class="stack">${csrfField(session)}
        ${input(state, 'individual', 'phone', 'Phone', {
          type: 'tel',
          hint: 'International format, e.g. +234 812 345 6781.',
        })}
        ${input(state, 'individual', 'name', 'Name')}
        <button type="submit">Register</button></form></section>
    <section class="card" aria-labelledby="user-title"><h2 id="user-title">Request a console user</h2>
      <p class="hint">Another administrator approves the request; the approval shows them a one-time temporary password
      to hand to the user, who chooses their own at the first login.</p>
      <form method="post" action="/console/admin/users" class="stack">${csrfField(session)}
        ${partyTypeSelect(state, 'user', true)}
        ${input(state, 'user', 'shortCode', 'Party short code', {
          hint: 'The distributor’s or merchant’s short code; empty for an administrator.',
        })}
        ${input(state, 'user', 'email', 'Email', { type: 'email' })}
        <fieldset class="field${rolesError ? ' invalid' : ''}"><legend>Roles</legend>
          ${rolesError ? html`<p class="field-error" id="user-roles-error">${rolesError}</p>` : ''}
          ${(['maker', 'checker'] as const).map(
            (role) =>
              html`<div class="check"><input type="checkbox" id="user-role-${role}" name="roles"
                  value="${role}"${roles.includes(role) ? html` checked` : ''}><label for="user-role-${role}">${
                    role === 'maker'
                      ? 'Maker — requests keys and revocations'
                      : 'Checker — approves keys and operations'
                  }</label></div>`,
          )}
        </fieldset>
        ${input(state, 'user', 'reason', 'Reason (optional)', {
          hint: 'For the approving administrator, e.g. “new cashier at branch 3”.',
        })}
        <button type="submit">Request user</button></form></section>
    </div>`;
}

export function adminRoutes(router: Router, services: ConsoleServices): void {
  const { backOffice, lookup } = services;

  const show = (res: Response, state: FormState | null, status = 200) =>
    renderPage(services, res, {
      title: 'Administration',
      section: 'admin',
      status,
      body: adminPage(viewer(res).session, state),
    });

  /** Runs a form's command; a domain refusal re-renders the form with the message beside its field. */
  const handle = (
    path: string,
    form: FormName,
    names: string[],
    run: (req: Request, res: Response) => Promise<string | { text: string; location: string }>,
  ) =>
    router.post(path, async (req, res) => {
      requireAdmin(res);
      try {
        const done = await run(req, res);
        const { text, location } = typeof done === 'string' ? { text: done, location: '/console/admin' } : done;
        await redirectWith(services, res, location, { kind: 'ok', text });
      } catch (error) {
        if (!(error instanceof DomainError) || ['ROLE_REQUIRED', 'OTHER_PARTY', 'SAME_USER'].includes(error.code))
          throw error;
        const values = Object.fromEntries(
          names.map((n) => [n, n === 'roles' ? fields(req, n) : (field(req, n) ?? '')]),
        );
        const name = error.field && names.includes(error.field) ? error.field : names[names.length - 1]!;
        await show(
          res,
          { form, values, errors: { [name]: sentence(error.message) } },
          error.code === 'INVALID_INPUT' ? 400 : 409,
        );
      }
    });

  router.get('/admin', async (_req, res) => {
    requireAdmin(res);
    await show(res, null);
  });

  handle('/admin/parties', 'party', ['partyType', 'name', 'shortCode'], async (req, res) => {
    const partyType =
      field(req, 'partyType') === 'merchant'
        ? 'merchant'
        : field(req, 'partyType') === 'distributor'
          ? 'distributor'
          : null;
    if (!partyType) throw invalidInput('partyType', 'choose distributor or merchant');
    const { partyID } = await onboardParty(
      backOffice,
      { partyType, name: field(req, 'name'), shortCode: field(req, 'shortCode')?.trim() },
      commandContext(res),
    );
    return (
      `${partyType === 'distributor' ? 'Distributor' : 'Merchant'} “${(field(req, 'name') ?? '').trim()}” ` +
      `onboarded with short code ${field(req, 'shortCode')?.trim()} (id ${partyID}).`
    );
  });

  handle('/admin/individuals', 'individual', ['phone', 'name'], async (req, res) => {
    const { phone } = await registerIndividual(
      backOffice,
      { phone: field(req, 'phone'), name: field(req, 'name') },
      commandContext(res),
    );
    return `Individual ${phone} registered.`;
  });

  handle('/admin/users', 'user', ['partyType', 'shortCode', 'email', 'roles', 'reason'], async (req, res) => {
    const type = field(req, 'partyType');
    let party: PartyRef | null = null;
    if (type === 'distributor' || type === 'merchant') {
      const code = parseShortCode('shortCode', field(req, 'shortCode')?.trim());
      const found = await lookup.byShortCode(type, code);
      if (!found) throw invalidInput('shortCode', `no ${type} has the short code ${code}`);
      party = { type, id: found.id };
    } else if (type !== 'platform')
      throw invalidInput('partyType', 'choose a distributor, a merchant or a platform administrator');
    const { requestID, change } = await requestAccessChange(
      backOffice,
      viewer(res).user,
      { kind: 'add-user', party, email: field(req, 'email'), roles: fields(req, 'roles') },
      field(req, 'reason'),
      commandContext(res),
    );
    const email = change.kind === 'add-user' ? change.email : '';
    return {
      text: `User ${email} requested (${requestID}). Another administrator must approve it before it exists.`,
      location: '/console/admin/access',
    };
  });
}
