/**
 * The TypeScript client as an integrator gets it: packed (`npm pack`, whose prepack builds dist/), installed from
 * the tarball into an empty project outside the repository with only registry packages beside it (openapi-fetch,
 * its peer dependency), and used by a typed program that is type-checked against the package's declarations and
 * then run against a live server.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSystem, WITHOUT_EXECUTOR, type TestParty, type TestSystem } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

const run = promisify(execFile);
const PACKAGE = fileURLToPath(new URL('../../clients/typescript/', import.meta.url));
const PROJECT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(PROJECT, 'node_modules/typescript-native/bin/tsc');
const PHONE = '+2348123456781';

/** The program an integrator writes: every call typed by the package; the @ts-expect-error lines fail the check if the types were lost. */
const PROGRAM = `import { createWalletClient, WalletApiError, type DistributorOperation, type Payment } from '@wallet-ops/client';

declare const process: { argv: string[] };
const [baseUrl, distributorKey, distributorID, merchantKey, merchantID, merchantShortCode, phone] = process.argv.slice(2) as [string, string, string, string, string, string, string];

const distributor = createWalletClient({ baseUrl, apiKey: distributorKey }).distributor(distributorID);
const merchant = createWalletClient({ baseUrl, apiKey: merchantKey }).merchant(merchantID);
const first = await distributor.createOperation({ operationType: 'cash-in', amount: '1.00', phoneTo: phone, memo: 'from the package' });
const second = await distributor.createOperation({ operationType: 'cash-in', amount: '2.00', merchantToShortCode: Number(merchantShortCode) });
const one: DistributorOperation = await distributor.operation(first.operationID);
const pending: string[] = [];
for await (const operation of distributor.allOperations({ pageSize: 1, status: 'pending' })) pending.push(operation.operationID);
const payments: Payment[] = [];
for await (const payment of merchant.allPayments({ pageSize: 1, search: 'nothing like it' })) payments.push(payment);
let missing = 0;
try {
  await distributor.operation('op_00000000000000000000000000000000');
} catch (error) {
  if (error instanceof WalletApiError) missing = error.status;
}
// @ts-expect-error the page size is an option of every iterator, not a bare number
distributor.allOperations(5);
// @ts-expect-error a cash-in names one destination
await distributor.createOperation({ operationType: 'cash-in', amount: '1.00', phoneTo: phone, merchantToShortCode: '1' }).catch(() => null);
console.log(JSON.stringify({
  ids: [first.operationID, second.operationID],
  one: { operationID: one.operationID, status: one.status, memo: one.memo },
  pending,
  payments: payments.length,
  balance: (await distributor.balance()).balance,
  received: (await merchant.operation(second.operationID)).operationType,
  missing,
}));
`;

describe('the client package', () => {
  let sys: TestSystem;
  let distributor: TestParty;
  let merchant: TestParty;
  const scratch = tempDir('wallet-ops-client-');

  beforeAll(async () => {
    sys = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
    [distributor, merchant] = [await sys.party('distributor'), await sys.party('merchant')];
    await sys.individual(PHONE);
    await sys.credit(distributor.wallet, '100.00');
  });
  afterAll(async () => {
    scratch.cleanup();
    await sys?.close();
  });

  it('states its name, version, entry points, declarations and the openapi-fetch it is built for', () => {
    const manifest = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8'));
    const built = JSON.parse(readFileSync(join(PROJECT, 'node_modules/openapi-fetch/package.json'), 'utf8'))
      .version as string;
    expect(manifest).toMatchObject({
      name: '@wallet-ops/client',
      type: 'module',
      types: './dist/index.d.ts',
      exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' } },
    });
    expect(manifest.version).toMatch(/^\d+\.\d+\.\d+$/);
    // The range admits the version the repository builds and tests it with.
    const [major, minor] = built.split('.');
    expect(manifest.peerDependencies).toEqual({ 'openapi-fetch': `~${major}.${minor}.0` });
  });

  it('when packed and installed into an empty project with openapi-fetch from the registry, then a typed program type-checks and runs against a live server', async () => {
    const { stdout: packed } = await run('npm', ['pack', '--json', '--pack-destination', scratch.path], {
      cwd: PACKAGE,
      env: { ...process.env, npm_config_loglevel: 'error' },
    });
    const [tarball] = JSON.parse(packed) as Array<{ filename: string; files: Array<{ path: string }> }>;
    const files = tarball!.files.map((f) => f.path).sort();
    expect(files).toEqual(
      expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/client.js', 'package.json', 'README.md']),
    );
    expect(files.filter((f) => f.startsWith('src/') || f.endsWith('.test.ts'))).toEqual([]);
    // What Node and tsc load imports .js, never .ts (which Node does not strip under node_modules).
    const app = join(scratch.path, 'app');
    await run('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'integrator-app', private: true, type: 'module' }));
    const openapiFetch = JSON.parse(readFileSync(join(PROJECT, 'node_modules/openapi-fetch/package.json'), 'utf8'))
      .version as string;
    await run(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--ignore-scripts',
        join(scratch.path, tarball!.filename),
        `openapi-fetch@${openapiFetch}`,
      ],
      { cwd: app, timeout: 120_000 },
    );
    const installed = join(app, 'node_modules/@wallet-ops/client/dist');
    for (const file of ['index.js', 'client.js', 'index.d.ts', 'client.d.ts']) {
      expect(readFileSync(join(installed, file), 'utf8'), file).not.toMatch(/from\s+['"]\.{1,2}\/[^'"]+\.ts['"]/);
    }

    writeFileSync(join(app, 'program.ts'), PROGRAM);
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        // No @types/node: the package's declarations must stand on the standard library (fetch, Request, Response).
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          verbatimModuleSyntax: true,
          erasableSyntaxOnly: true,
          lib: ['ES2023', 'DOM', 'DOM.Iterable'],
          types: [],
        },
        files: ['program.ts'],
      }),
    );
    const checked = await run(process.execPath, [TSC, '-p', app, '--singleThreaded', '--pretty', 'false'], {
      cwd: app,
    }).catch((error: { stdout: string }) => error);
    expect(checked.stdout).toBe('');

    const distributorKey = (await distributor.key()).apiKey;
    const merchantKey = (await merchant.key()).apiKey;
    const { stdout } = await run(
      process.execPath,
      [
        join(app, 'program.ts'),
        sys.baseUrl,
        distributorKey,
        distributor.ref.id,
        merchantKey,
        merchant.ref.id,
        merchant.shortCode,
        PHONE,
      ],
      { cwd: app },
    );
    const result = JSON.parse(stdout);
    expect(result).toMatchObject({
      one: { operationID: result.ids[0], status: 'pending', memo: 'from the package' },
      payments: 0,
      balance: '100.00',
      received: 'cash-in',
      missing: 404,
    });
    expect([...result.pending].sort()).toEqual([...result.ids].sort());
  }, 60_000);
});
