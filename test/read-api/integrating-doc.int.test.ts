import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../src/read-api/schemas.ts';
import { BODY_LIMIT } from '../../src/write-api/routes.ts';

/** docs/integrating.md states figures of the code: each is checked against it, so the guide cannot drift. */
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
/** Lines are wrapped anywhere: compared with single spaces. */
const guide = read('docs/integrating.md').replace(/\s+/g, ' ');
const defaults = loadConfig({});

describe('docs/integrating.md', () => {
  it('when the README is read, then it links the guide', () => {
    expect(read('README.md')).toContain('(docs/integrating.md)');
  });

  it("when the guide states a default or a bound, then it is the code's", () => {
    expect(guide).toContain(`\`limit\` (1 to ${MAX_LIMIT}, default ${DEFAULT_LIMIT})`);
    expect(guide).toContain(
      `at most \`READ_YOUR_WRITES_TIMEOUT_MS\`, ${defaults.READ_YOUR_WRITES_TIMEOUT_MS / 1000} s by default`,
    );
    expect(guide).toContain(`(default ${defaults.API_KEY_RATE_LIMIT}, bursts of ${defaults.API_KEY_RATE_BURST})`);
    expect(guide).toContain(`\`ASSET_SCALE\` places (${defaults.ASSET_SCALE} by default)`);
    expect(guide).toContain(`(\`CREATE_DEADLINE_MS\`, ${defaults.CREATE_DEADLINE_MS / 1000} s by default`);
    expect(guide).toContain(`Bodies up to ${BODY_LIMIT.replace('kb', ' kB')}`);
  });

  it('when the guide speaks of webhooks, then it names the Standard Webhooks headers the deliveries carry', () => {
    const signing = read('src/domain/webhook-secrets.ts');
    for (const header of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      expect(guide).toContain(`\`${header}\``);
      expect(signing).toContain(`'${header}'`);
    }
    expect(guide).not.toMatch(/being added/);
  });

  it('when the guide names a problem type, then the HTTP layer maps one of that name', () => {
    const source = read('src/http/problems.ts') + read('src/read-api/freshness.ts');
    for (const [, type] of guide.matchAll(/`(\/problems\/[a-z-]+)`/g)) expect(source, type).toContain(`'${type}'`);
  });
});

describe('docs/api-contract.md', () => {
  const contract = read('docs/api-contract.md');
  const document = JSON.parse(read('openapi.json')) as {
    paths: Record<string, Record<string, { parameters: Array<{ name: string; in: string }> }>>;
  };

  it('when the README names the API contract, then it is this file in the repository, never a file outside it', () => {
    const readme = read('README.md');
    expect(readme).toContain('(docs/api-contract.md)');
    expect(readme).not.toMatch(/\.\.\/shared\/spec/);
    expect(guide).toContain('(api-contract.md)');
  });

  it('when the OpenAPI document has an operation, then the contract names its method and path, and each of its query parameters', () => {
    for (const [path, methods] of Object.entries(document.paths)) {
      if (!path.startsWith('/api/v1/') || path.endsWith('openapi.json') || path.endsWith('/docs')) continue;
      for (const [method, operation] of Object.entries(methods)) {
        expect(contract, `${method} ${path}`).toContain(`${method.toUpperCase()} ${path}`);
        for (const parameter of operation.parameters.filter((p) => p.in === 'query'))
          expect(contract, `${path} ?${parameter.name}`).toContain(`\`${parameter.name}\``);
      }
    }
  });

  it('when the contract names a problem type, then the HTTP layer answers with it', () => {
    const source = read('src/http/problems.ts');
    const named = [...contract.matchAll(/`(\/problems\/[a-z-]+)`/g)].map(([, type]) => type!);
    expect(named.length).toBeGreaterThan(10);
    for (const type of named) expect(source, type).toContain(`'${type}'`);
  });
});
