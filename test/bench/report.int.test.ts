import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeBenchSection } from '../../bench/support/report.ts';
import { tempDir } from '../support/temp-dir.ts';

describe('a bench writing its section of docs/benchmarks.md', () => {
  it('replaces its own section and its own subsections, and keeps a subsection written there by hand', () => {
    // Given a section with the bench's own subsection, then one added by hand, then another bench's section
    const dir = tempDir();
    const doc = join(dir.path, 'benchmarks.md');
    writeFileSync(
      doc,
      '# Benchmarks\n\n## Mine\nold\n\n### Profile\nold profile\n\n### By hand\nkept\n\n## Other\nother\n',
    );
    // When the bench writes its section again
    writeBenchSection('## Mine', '## Mine\nnew\n\n### Profile\nnew profile\n', doc);
    // Then its text is new, the hand-written subsection and the other section are still there
    expect(readFileSync(doc, 'utf8')).toBe(
      '# Benchmarks\n\n## Mine\nnew\n\n### Profile\nnew profile\n\n### By hand\nkept\n\n## Other\nother\n',
    );
    dir.cleanup();
  });

  it('appends a section the document does not have yet', () => {
    const dir = tempDir();
    const doc = join(dir.path, 'benchmarks.md');
    writeFileSync(doc, '# Benchmarks\n\n## Other\nother\n');
    writeBenchSection('## Mine', '## Mine\nnew\n', doc);
    expect(readFileSync(doc, 'utf8')).toBe('# Benchmarks\n\n## Other\nother\n\n## Mine\nnew\n');
    dir.cleanup();
  });
});
