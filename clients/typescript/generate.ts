import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';

/**
 * The client's types, generated from the committed OpenAPI document (openapi.json) by openapi-typescript:
 * `npm run openapi` writes them to src/schema.ts; test/clients checks that they are current and that a
 * program using every operation type-checks against them.
 */
export const DOCUMENT = fileURLToPath(new URL('../../openapi.json', import.meta.url));
export const SCHEMA = fileURLToPath(new URL('./src/schema.ts', import.meta.url));

export async function generateClientTypes(document: unknown): Promise<string> {
  const ast = await openapiTS(document as Parameters<typeof openapiTS>[0]);
  return `${COMMENT_HEADER}${astToString(ast)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(SCHEMA, await generateClientTypes(JSON.parse(readFileSync(DOCUMENT, 'utf8'))));
}
