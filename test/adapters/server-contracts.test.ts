/**
 * Says, in one line of the test output, which adapter contract suites did not run and why: the KurrentDB
 * and MongoDB suites need real servers (KURRENTDB_URL, MONGODB_URL), and no fake stands in for them.
 */
import { beforeAll, describe, expect, it } from 'vitest';

const missing = [
  { server: 'KurrentDB', variable: 'KURRENTDB_URL' },
  { server: 'MongoDB', variable: 'MONGODB_URL' },
].filter(({ variable }) => !process.env[variable]);

/** The line, or null when every server suite runs. */
export function skippedLine(absent: Array<{ server: string; variable: string }>): string | null {
  if (absent.length === 0) return null;
  const servers = absent.map((m) => m.server).join(' and ');
  const variables = absent.map((m) => m.variable).join(' and ');
  const suites = absent.length === 1 ? 'suite' : 'suites';
  return `${servers} adapter contract ${suites} skipped: ${variables} ${absent.length === 1 ? 'is' : 'are'} not set`;
}

describe('server adapter contract suites', () => {
  beforeAll(() => {
    const line = skippedLine(missing);
    if (line) console.warn(line);
  });

  it('when a server URL is missing, then one line names the skipped suites and the variables', () => {
    expect(
      skippedLine([
        { server: 'KurrentDB', variable: 'KURRENTDB_URL' },
        { server: 'MongoDB', variable: 'MONGODB_URL' },
      ]),
    ).toBe('KurrentDB and MongoDB adapter contract suites skipped: KURRENTDB_URL and MONGODB_URL are not set');
    expect(skippedLine([{ server: 'MongoDB', variable: 'MONGODB_URL' }])).toBe(
      'MongoDB adapter contract suite skipped: MONGODB_URL is not set',
    );
    expect(skippedLine([])).toBeNull();
  });
});
