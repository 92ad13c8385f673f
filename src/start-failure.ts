/**
 * What a start that failed prints: one line. A store's refusal (a SQLSTATE from PostgreSQL, an errno from the
 * system) is the operator's to fix, and says how where it can; a stack is only for a fault in our own code.
 * Control characters (a newline in a server's message, a NUL) are folded, so the line stays one line.
 */
const HINTS: Record<string, string> = {
  '28P01': 'check the user and password in POSTGRES_URL',
  '28000':
    'the server refuses this user from this address (pg_hba.conf), or the user does not exist: check POSTGRES_URL',
  '3D000': 'create the database, or correct its name in POSTGRES_URL',
  ECONNREFUSED: 'nothing listens there: start the server, or correct the address',
  ENOTFOUND: 'the host name does not resolve: correct the address',
};

const oneLine = (text: string) =>
  text
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .replace(/ {2,}/g, ' ')
    .trim();

export function startFailure(error: unknown): string {
  if (!(error instanceof Error)) return `cannot start: ${oneLine(String(error))}`;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return error.stack ?? error.message;
  // A damaged store does not heal by waiting (src/ports/store-corrupted.ts): it is restored.
  if (code === 'STORE_CORRUPTED')
    return (
      `refusing to start: ${oneLine(error.message)}. Restore it from a backup (docs/operations.md, "Backup and ` +
      'restore")'
    );
  const what = /^28/.test(code) ? 'PostgreSQL refused the login: ' : '';
  const hint = HINTS[code];
  return `cannot start: ${what}${oneLine(error.message)} (${code})${hint ? `; ${hint}` : ''}`;
}
