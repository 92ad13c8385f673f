import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BENCHMARKS_DOC = fileURLToPath(new URL('../../docs/benchmarks.md', import.meta.url));

/**
 * Replaces one benchmark's section of docs/benchmarks.md, keeping the others: from its `## ` heading up to the next
 * `## `, or to the first `### ` the new section does not write itself (a subsection added by hand after the bench's
 * own output stays).
 */
export function writeBenchSection(heading: string, section: string, doc = BENCHMARKS_DOC): void {
  mkdirSync(dirname(doc), { recursive: true });
  const current = existsSync(doc) ? readFileSync(doc, 'utf8') : '# Benchmarks\n';
  const lines = current.split('\n');
  const start = lines.findIndex((line) => line.trim() === heading);
  let next: string;
  if (start === -1) {
    next = `${current.trimEnd()}\n\n${section}`;
  } else {
    const own = new Set(section.split('\n').filter((line) => line.startsWith('### ')));
    const end = lines.findIndex(
      (line, i) => i > start && (line.startsWith('## ') || (line.startsWith('### ') && !own.has(line))),
    );
    const after = end === -1 ? '' : `\n${lines.slice(end).join('\n')}`;
    const before = lines.slice(0, start).join('\n');
    next = `${before === '' ? '' : `${before}\n`}${section}${after}`;
  }
  writeFileSync(doc, `${next.trimEnd()}\n`);
}

/** The machine line every section carries: the figures are only comparable as ratios within one run. */
export function machineNote(): string {
  return `Measured ${new Date().toISOString().slice(0, 10)} on Node ${process.version}, 2 shared cores: absolute figures are noisy, compare the ratios to the baseline of the same run.`;
}
