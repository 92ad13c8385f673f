import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { newWebhookSecret, signatureHeaders, signWebhook } from '../../src/domain/webhook-secrets.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * The signature checks that docs/webhooks.md gives clients, run exactly as written (extracted from the page)
 * against signatures wallet-ops makes: a client who copies them must accept our deliveries and refuse forgeries.
 * The Standard Webhooks snippets use the libraries; the legacy ones (stripe-v1) only the standard library.
 */
const page = readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');
const snippet = (language: string) => {
  const match = new RegExp(`<!-- snippet: ${language} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\`\`\``).exec(page);
  if (!match) throw new Error(`docs/webhooks.md has no ${language} snippet`);
  return match[1]!;
};

const dir = tempDir('wallet-ops-snippets-');
afterAll(() => dir.cleanup());

const secret = newWebhookSecret();
const body = JSON.stringify({
  id: 'evt_abcdefghijklmnopqrstuvwx',
  type: 'operation.completed',
  data: { operation: { amount: '300.00', memo: 'naïve café' } },
});
const now = Math.floor(Date.now() / 1000);
/** [header, body, expected]: ours, a tampered body, another secret, an old timestamp, garbage. */
const cases: Array<[string, string, boolean]> = [
  [signWebhook(secret, now, body), body, true],
  [`${signWebhook(secret, now, body)},v1=${'0'.repeat(64)}`, body, true],
  [signWebhook(secret, now, body), body.replace('300.00', '900.00'), false],
  [signWebhook(newWebhookSecret(), now, body), body, false],
  [signWebhook(secret, now - 3600, body), body, false],
  ['t=abc,v1=zz', body, false],
];

/** Standard Webhooks: [headers, body, expected], ours, during a rotation, tampered, another secret, old, none. */
const eventID = 'evt_abcdefghijklmnopqrstuvwx';
const standardCases: Array<[Record<string, string>, string, boolean]> = [
  [signatureHeaders('standard-webhooks', [secret], eventID, now, body), body, true],
  [signatureHeaders('standard-webhooks', [newWebhookSecret(), secret], eventID, now, body), body, true],
  [signatureHeaders('standard-webhooks', [secret], eventID, now, body), body.replace('300.00', '900.00'), false],
  [{ ...signatureHeaders('standard-webhooks', [secret], eventID, now, body), 'webhook-id': 'evt_other' }, body, false],
  [signatureHeaders('standard-webhooks', [newWebhookSecret()], eventID, now, body), body, false],
  [signatureHeaders('standard-webhooks', [secret], eventID, now - 3600, body), body, false],
  [signatureHeaders('stripe-v1', [secret], eventID, now, body), body, false],
];

describe('docs/webhooks.md Standard Webhooks snippets', () => {
  it('the TypeScript snippet (standardwebhooks package) accepts our signatures and refuses the others', () => {
    // Beside the project's node_modules, so that the snippet's import resolves as in an integrator's project.
    const root = fileURLToPath(new URL('../../.tmp/', import.meta.url));
    mkdirSync(root, { recursive: true });
    const dir = mkdtempSync(join(root, 'snippets-'));
    try {
      const file = join(dir, 'verify.ts');
      writeFileSync(
        file,
        `${snippet('typescript')}\nconst cases = JSON.parse(process.argv[2]!);\nconsole.log(JSON.stringify(cases.map(([headers, body]: [Record<string, string>, string]) => { try { verifyWalletOpsWebhook(process.argv[3]!, headers, body); return true; } catch { return false; } })));\n`,
      );
      const out = execFileSync(process.execPath, [file, JSON.stringify(standardCases), secret], { encoding: 'utf8' });
      expect(JSON.parse(out)).toEqual(standardCases.map(([, , expected]) => expected));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const pythonLibrary = spawnSync('python3', ['-c', 'import standardwebhooks']).status === 0;
  it.skipIf(!pythonLibrary)(
    'the Python snippet (standardwebhooks package) accepts our signatures and refuses the others (skipped without it)',
    () => {
      const file = join(dir.path, 'verify_standard.py');
      writeFileSync(
        file,
        `${snippet('python-standard')}\nimport json, sys\ncases = json.loads(sys.argv[1])\ndef ok(headers, body):\n    try:\n        verify_wallet_ops_webhook(sys.argv[2], headers, body.encode("utf-8"))\n        return True\n    except Exception:\n        return False\nprint(json.dumps([ok(headers, body) for headers, body, _ in cases]))\n`,
      );
      const out = execFileSync('python3', [file, JSON.stringify(standardCases), secret], { encoding: 'utf8' });
      expect(JSON.parse(out)).toEqual(standardCases.map(([, , expected]) => expected));
    },
  );
});

describe('docs/webhooks.md legacy (stripe-v1) signature snippets', () => {
  it('the Node snippet accepts our signatures and refuses the others', () => {
    const file = join(dir.path, 'verify.mjs');
    writeFileSync(
      file,
      `${snippet('node')}\nconst cases = JSON.parse(process.argv[2]);\nconsole.log(JSON.stringify(cases.map(([header, body]) => verifyWalletOpsWebhook(process.argv[3], header, Buffer.from(body, 'utf8')))));\n`,
    );
    const out = execFileSync(process.execPath, [file, JSON.stringify(cases), secret], { encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual(cases.map(([, , expected]) => expected));
  });

  const python = spawnSync('python3', ['--version']).status === 0;
  it.skipIf(!python)(
    'the Python snippet accepts our signatures and refuses the others (skipped without python3)',
    () => {
      const file = join(dir.path, 'verify.py');
      writeFileSync(
        file,
        `${snippet('python')}\nimport json, sys\ncases = json.loads(sys.argv[1])\nprint(json.dumps([verify_wallet_ops_webhook(sys.argv[2], header, body.encode("utf-8")) for header, body, _ in cases]))\n`,
      );
      const out = execFileSync('python3', [file, JSON.stringify(cases), secret], { encoding: 'utf8' });
      expect(JSON.parse(out)).toEqual(cases.map(([, , expected]) => expected));
    },
  );
});
