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

  it('when the guide states a default or a bound, then it is the code\'s', () => {
    expect(guide).toContain(`\`limit\` (1 to ${MAX_LIMIT}, default ${DEFAULT_LIMIT})`);
    expect(guide).toContain(`at most \`READ_YOUR_WRITES_TIMEOUT_MS\`, ${defaults.READ_YOUR_WRITES_TIMEOUT_MS / 1000} s by default`);
    expect(guide).toContain(`(default ${defaults.API_KEY_RATE_LIMIT}, bursts of ${defaults.API_KEY_RATE_BURST})`);
    expect(guide).toContain(`\`ASSET_SCALE\` places (${defaults.ASSET_SCALE} by default)`);
    expect(guide).toContain(`(\`CREATE_DEADLINE_MS\`, ${defaults.CREATE_DEADLINE_MS / 1000} s by default`);
    expect(guide).toContain(`Bodies up to ${BODY_LIMIT.replace('kb', ' kB')}`);
  });

  it('when the guide names a problem type, then the HTTP layer maps one of that name', () => {
    const source = read('src/http/problems.ts') + read('src/read-api/freshness.ts');
    for (const [, type] of guide.matchAll(/`(\/problems\/[a-z-]+)`/g)) expect(source, type).toContain(`'${type}'`);
  });
});
