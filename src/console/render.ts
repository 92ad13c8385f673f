import type { Request, Response, Router } from 'express';
import { formRefusal, sentence, viewer, type ConsoleServices, type Viewer } from './context.ts';
import type { Html, Renderable } from '../http/html.ts';
import type { SessionDoc } from './sessions.ts';
import { noStore } from './http-security.ts';
import { page, type Section } from './layout.ts';
import { NOTHING_WAITING, waitingFor } from './waiting.ts';

/**
 * Sends a full page for the logged-in viewer: their party, a pending flash message, and any secret waiting for them.
 */
export async function renderPage(
  services: ConsoleServices,
  res: Response,
  options: { title: string; section: Section; body: Renderable; status?: number },
): Promise<void> {
  const current = res.locals.consoleViewer as Viewer | undefined;
  noStore(res);
  if (!current) {
    res
      .status(options.status ?? 200)
      .type('html')
      .send(page({ title: options.title, section: 'none', body: options.body }).value);
    return;
  }
  const { user, session } = current;
  const partyName = user.party ? ((await services.lookup.party(user.party))?.name ?? null) : null;
  const flash = await services.sessions.takeFlash(session);
  // Taken as the page is rendered: the next view, a reload included, will not have it. Only a GET shows it
  // (a HEAD would take it and send no body).
  const secrets = res.req.method === 'GET' ? await services.secrets.take(user.userID) : [];
  // The counts are a convenience: a page is never refused because they could not be read.
  const waiting = await waitingFor(services, user).catch((error: unknown) => {
    services.deps.logger.warn({ err: error, userID: user.userID }, 'console: waiting counts not available');
    return NOTHING_WAITING;
  });
  const body = page({
    ...options,
    viewer: { user, session, partyName, waiting },
    flash,
    secrets,
    pollMs: services.deps.waitingPollMs ?? 15_000,
  });
  res
    .status(options.status ?? 200)
    .type('html')
    .send(body.value);
}

/** Post/Redirect/Get: the message is shown once on the page redirected to. */
export async function redirectWith(
  services: ConsoleServices,
  res: Response,
  location: string,
  flash: { kind: 'ok' | 'error'; text: string },
): Promise<void> {
  const current = res.locals.consoleViewer as Viewer | undefined;
  if (current) await services.sessions.setFlash(current.session, flash);
  res.redirect(303, location);
}

/**
 * A form that asks for a reason (a rotation, a revocation): GET shows it, POST runs its command and redirects with
 * the command's message; a refusal of the input shows the form again (400) with the refusal's words.
 */
export function reasonFormRoutes<Subject>(
  router: Router,
  services: ConsoleServices,
  form: {
    path: string;
    title: string;
    section: Section;
    /** Refuses a viewer who may not (their role), and loads what the form is about. */
    load: (req: Request, res: Response) => Promise<Subject>;
    page: (session: SessionDoc, subject: Subject, error?: string) => Html;
    words?: (message: string) => string;
    submit: (req: Request, res: Response, subject: Subject) => Promise<{ location: string; text: string }>;
  },
): void {
  const show = (res: Response, subject: Subject, error?: string) =>
    renderPage(services, res, {
      title: form.title,
      section: form.section,
      status: error === undefined ? 200 : 400,
      body: form.page(viewer(res).session, subject, error),
    });
  router.get(form.path, async (req, res) => show(res, await form.load(req, res)));
  router.post(form.path, async (req, res) => {
    const subject = await form.load(req, res);
    const { refused, value } = await formRefusal(() => form.submit(req, res, subject));
    if (refused) return show(res, subject, (form.words ?? sentence)(refused.message));
    await redirectWith(services, res, value.location, { kind: 'ok', text: value.text });
  });
}
