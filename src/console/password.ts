import type { RequestHandler, Router } from 'express';
import { changeOwnPassword } from '../commands/user-admin.ts';
import { MIN_PASSWORD_LENGTH } from '../domain/passwords.ts';
import { html, type Html } from '../http/html.ts';
import { commandContext, ConsoleError, field, viewer, type ConsoleServices, formRefusal, sentence } from './context.ts';
import { csrfField } from './layout.ts';
import { redirectWith, renderPage } from './render.ts';
import type { SessionDoc } from './sessions.ts';

/**
 * Every user changes their own password here, with the current one. A user whose password is a one-time
 * temporary one (a new user, or after an administrator's reset) can do nothing else until they have.
 */
const PATH = '/password';

function passwordPage(session: SessionDoc, forced: boolean, errors: Record<string, string> = {}): Html {
  const input = (name: string, label: string, autocomplete: string, hint?: string) => {
    const error = errors[name];
    const describedBy = [hint ? `${name}-hint` : '', error ? `${name}-error` : ''].filter(Boolean).join(' ');
    return html`<div class="field${error ? ' invalid' : ''}">
      <label for="${name}">${label}</label>
      ${hint ? html`<p class="hint" id="${name}-hint">${hint}</p>` : ''}
      ${error ? html`<p class="field-error" id="${name}-error">${error}</p>` : ''}
      <input id="${name}" name="${name}" type="password" autocomplete="${autocomplete}" required
        maxlength="1024"${
          describedBy ? html` aria-describedby="${describedBy}"` : ''
        }${error ? html` aria-invalid="true"` : ''}>
    </div>`;
  };
  return html`<h1>${forced ? 'Choose your password' : 'Change your password'}</h1>
    ${
      forced
        ? html`<p class="notice error" role="alert">You logged in with a temporary password. Choose your own password to
          continue: the temporary one stops working.</p>`
        : ''
    }
    <form method="post" action="/console/password" class="stack">${csrfField(session)}
      ${input('currentPassword', forced ? 'Temporary password' : 'Current password', 'current-password')}
      ${input('newPassword', 'New password', 'new-password', `At least ${MIN_PASSWORD_LENGTH} characters.`)}
      ${input('confirmPassword', 'New password, again', 'new-password')}
      <div class="actions">
      <button type="submit">Change password</button>${forced ? '' : html` <a href="/console/">Cancel</a>`}</div>
    </form>`;
}

export function passwordRoutes(router: Router, services: ConsoleServices): void {
  router.get(PATH, async (_req, res) => {
    const { user, session } = viewer(res);
    await renderPage(services, res, {
      title: 'Password',
      section: 'password',
      body: passwordPage(session, user.mustChangePassword),
    });
  });

  router.post(PATH, async (req, res) => {
    const { user, session } = viewer(res);
    const newPassword = field(req, 'newPassword') ?? '';
    const show = (errors: Record<string, string>) =>
      renderPage(services, res, {
        title: 'Password',
        section: 'password',
        status: 400,
        body: passwordPage(session, user.mustChangePassword, errors),
      });
    if (newPassword !== (field(req, 'confirmPassword') ?? ''))
      return show({ confirmPassword: 'The two new passwords differ.' });
    const { refused } = await formRefusal(() =>
      changeOwnPassword(
        services.backOffice,
        user,
        { currentPassword: field(req, 'currentPassword'), newPassword },
        commandContext(res),
      ),
    );
    if (refused)
      return show({
        [refused.field === 'currentPassword' ? 'currentPassword' : 'newPassword']: sentence(refused.message),
      });
    // Whoever else was logged in as this user (with the old password) is logged out.
    await services.sessions.endAllFor(user.userID, session.id);
    services.deps.logger.info({ userID: user.userID }, 'console: password changed');
    await redirectWith(services, res, '/console/', { kind: 'ok', text: 'Your password has been changed.' });
  });

  // A temporary password opens this page and logout only.
  router.use(mustChangePasswordGate);
}

const mustChangePasswordGate: RequestHandler = (req, res, next) => {
  if (!viewer(res).user.mustChangePassword) return next();
  if (req.method === 'GET' || req.method === 'HEAD') return res.redirect(303, `/console${PATH}`);
  throw new ConsoleError(403, 'Choose your own password first: you logged in with a temporary one.');
};
