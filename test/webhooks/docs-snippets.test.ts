import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { newWebhookSecret, signWebhook } from '../../src/domain/webhook-secrets.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * The signature checks that docs/webhooks.md gives clients, run exactly as written (extracted from the page)
 * against signatures wallet-ops makes: a client who copies them must accept our deliveries and refuse forgeries.
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
const body = JSON.stringify({ id: 'evt_abcdefghijklmnopqrstuvwx', type: 'operation.completed', data: { operation: { amount: '300.00', memo: 'naïve café' } } });
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

describe('docs/webhooks.md signature snippets', () => {
  it('the Node snippet accepts our signatures and refuses the others', () => {
    const file = join(dir.path, 'verify.mjs');
    writeFileSync(file, `${snippet('node')}\nconst cases = JSON.parse(process.argv[2]);\nconsole.log(JSON.stringify(cases.map(([header, body]) => verifyWalletOpsWebhook(process.argv[3], header, Buffer.from(body, 'utf8')))));\n`);
    const out = execFileSync(process.execPath, [file, JSON.stringify(cases), secret], { encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual(cases.map(([, , expected]) => expected));
  });

  const python = spawnSync('python3', ['--version']).status === 0;
  it.skipIf(!python)('the Python snippet accepts our signatures and refuses the others (skipped without python3)', () => {
    const file = join(dir.path, 'verify.py');
    writeFileSync(file, `${snippet('python')}\nimport json, sys\ncases = json.loads(sys.argv[1])\nprint(json.dumps([verify_wallet_ops_webhook(sys.argv[2], header, body.encode("utf-8")) for header, body, _ in cases]))\n`);
    const out = execFileSync('python3', [file, JSON.stringify(cases), secret], { encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual(cases.map(([, , expected]) => expected));
  });
});
