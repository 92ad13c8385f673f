import type { RequestHandler } from 'express';
import { controlCharacterIn, type ControlRule } from '../domain/text.ts';
import { ConsoleError } from './context.ts';

/**
 * No control character reaches a console route (issue 40): every name and value of the query string, of a form's
 * body and of the address itself is checked here, once, before login, session or lookup, with the text rule of
 * src/domain/text.ts. A query string and an address have no lines: every control is refused. A form's value may
 * start or end with tabs and line breaks (a pasted value's newline), which its field's rule trims; any control inside
 * a value, and any other control anywhere, is refused here.
 *
 * Passwords are not read: they are hashed, never stored, shown or searched, and a password set before this rule
 * must still log in. A refusal is the console's 400 page ("Check the form").
 */
const SECRET_FIELDS = new Set(['password', 'currentPassword', 'newPassword', 'confirmPassword']);

/** The first name or value of a parsed query or body holding a control character: what to say about it. */
function firstControl(values: unknown, rule: ControlRule): { name: string; found: string } | null {
  if (values === null || typeof values !== 'object') return null;
  for (const [name, value] of Object.entries(values)) {
    const inName = controlCharacterIn(name);
    if (inName) return { name: '', found: inName };
    if (SECRET_FIELDS.has(name)) continue;
    for (const item of Array.isArray(value) ? value : [value]) {
      const found = typeof item === 'string' ? controlCharacterIn(item, rule) : null;
      if (found) return { name, found };
    }
  }
  return null;
}

function refusal(what: string, { name, found }: { name: string; found: string }): ConsoleError {
  const which = name ? `${what} “${name}”` : `name of a ${what}`;
  return new ConsoleError(
    400,
    `The ${which} holds a control character (${found}), which the console does not accept. Remove it and send again.`,
  );
}

export const refuseControlCharacters: RequestHandler = (req, _res, next) => {
  let path: string | null;
  try {
    path = decodeURIComponent(req.path);
  } catch {
    path = null; // a malformed escape: express refuses the route's parameter with 400 itself
  }
  const inPath = path === null ? null : controlCharacterIn(path);
  if (inPath)
    throw new ConsoleError(
      400,
      `The address holds a control character (${inPath}), which the console does not accept.`,
    );
  const inQuery = firstControl(req.query, 'refused');
  if (inQuery) throw refusal('filter', inQuery);
  const inBody = firstControl(req.body, 'trimmed');
  if (inBody) throw refusal('field', inBody);
  next();
};
