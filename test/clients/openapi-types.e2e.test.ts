import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DOCUMENT, generateClientTypes, SCHEMA } from '../../clients/typescript/generate.ts';

const PROGRAM = fileURLToPath(new URL('./fixtures/every-operation.ts', import.meta.url));
const PROJECT = fileURLToPath(new URL('../..', import.meta.url));
const REGENERATE =
  'clients/typescript/src/schema.ts is not what openapi-typescript makes of openapi.json: run `npm run openapi` and commit it';

/**
 * Type-checks `root` alone, on the project's compiler options, with the compiler `npm run typecheck` runs (TypeScript 7's
 * native tsc: a fifth of the CPU of TypeScript 5's compiler API, which took 7 s here); returns its exit code and report.
 */
function typeCheck(root: string): { code: number | null; report: string } {
  mkdirSync(join(PROJECT, '.tmp'), { recursive: true });
  // Inside the project, so that `types: ["node"]` and the packages resolve from its node_modules.
  const dir = mkdtempSync(join(PROJECT, '.tmp', 'openapi-types-'));
  try {
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ extends: join(PROJECT, 'tsconfig.json'), include: [], files: [root] }),
    );
    const tsc = spawnSync(
      process.execPath,
      [
        join(PROJECT, 'node_modules/typescript-native/bin/tsc'),
        '--noEmit',
        '--singleThreaded',
        '--pretty',
        'false',
        '-p',
        dir,
      ],
      { encoding: 'utf8' },
    );
    return { code: tsc.status, report: `${tsc.stdout}${tsc.stderr}${tsc.error?.message ?? ''}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the types generated from the committed openapi.json', () => {
  it("when generated with openapi-typescript, then they are the client's committed schema.ts", async () => {
    const generated = await generateClientTypes(JSON.parse(readFileSync(DOCUMENT, 'utf8')));
    expect(generated === readFileSync(SCHEMA, 'utf8'), REGENERATE).toBe(true);
  });

  // The committed types, which the test above finds equal to the generated ones: a failure there says to regenerate.
  it('when a client program uses every operation with them, then it type-checks, and what they must refuse is refused', () => {
    expect(typeCheck(PROGRAM)).toEqual({ code: 0, report: '' });
  }, 60_000);
});
