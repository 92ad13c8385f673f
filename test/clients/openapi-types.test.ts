import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { DOCUMENT, generateClientTypes, SCHEMA } from '../../clients/typescript/generate.ts';

const PROGRAM = fileURLToPath(new URL('./fixtures/every-operation.ts', import.meta.url));
const REGENERATE = 'clients/typescript/src/schema.ts is not what openapi-typescript makes of openapi.json: run `npm run openapi` and commit it';

/** Type-checks `root` in process, with `overrides` in place of files of those paths; returns the diagnostics, formatted. */
function typeCheck(root: string, overrides: Record<string, string>): string[] {
  const configPath = fileURLToPath(new URL('../../tsconfig.json', import.meta.url));
  const { config } = ts.readConfigFile(configPath, ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, fileURLToPath(new URL('../..', import.meta.url)));
  const host = ts.createCompilerHost({ ...options, noEmit: true });
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => overrides[name] ?? readFile(name);
  const program = ts.createProgram([root], { ...options, noEmit: true }, host);
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n') + (d.file ? ` (${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1})` : ''));
}

describe('the types generated from the committed openapi.json', () => {
  it('when generated with openapi-typescript, then they are the client\'s committed schema.ts', async () => {
    const generated = await generateClientTypes(JSON.parse(readFileSync(DOCUMENT, 'utf8')));
    expect(generated === readFileSync(SCHEMA, 'utf8'), REGENERATE).toBe(true);
  });

  it('when a client program uses every operation with them, then it type-checks, and what they must refuse is refused', async () => {
    const generated = await generateClientTypes(JSON.parse(readFileSync(DOCUMENT, 'utf8')));
    expect(typeCheck(PROGRAM, { [SCHEMA]: generated })).toEqual([]);
  }, 60_000);
});
