/**
 * A parser of the Prometheus text exposition format (version 0.0.4), strict enough to fail a test on a
 * malformed scrape: every sample line must be `name{label="value",...} number`, label values unescaped
 * (\\, \", \n), every sample must belong to a family declared by `# TYPE`, and a family is declared once.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf('=', i);
    if (eq < 0) throw new Error(`bad labels in ${line}`);
    const key = text.slice(i, eq);
    if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(key)) throw new Error(`bad label name ${key} in ${line}`);
    if (text[eq + 1] !== '"') throw new Error(`unquoted label value in ${line}`);
    let value = '';
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === '\\') {
        const next = text[++j];
        value += next === 'n' ? '\n' : next;
      } else value += text[j];
    }
    if (text[j] !== '"') throw new Error(`unterminated label value in ${line}`);
    if (key in labels) throw new Error(`label ${key} twice in ${line}`);
    labels[key] = value;
    i = j + 1;
    if (text[i] === ',') i++;
  }
  return labels;
}

/** Go's ParseFloat, which Prometheus uses, reads NaN and Inf in any case (prom-client writes `Nan`). */
function parseValue(text: string, line: string): number {
  const lower = text.toLowerCase();
  if (lower === '+inf' || lower === 'inf') return Infinity;
  if (lower === '-inf') return -Infinity;
  if (lower === 'nan') return NaN;
  const value = Number(text);
  if (text === '' || Number.isNaN(value)) throw new Error(`bad value in ${line}`);
  return value;
}

/** The family a sample name belongs to: histograms and summaries expose `_bucket`, `_sum`, `_count`. */
function familyOf(sample: string, families: Map<string, Family>): Family | undefined {
  if (families.has(sample)) return families.get(sample);
  const base = sample.replace(/_(bucket|sum|count)$/, '');
  const family = families.get(base);
  return family && (family.type === 'histogram' || family.type === 'summary') ? family : undefined;
}

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const comment = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (comment) {
      const [, kind, name, rest] = comment;
      if (!NAME.test(name!)) throw new Error(`bad metric name in ${line}`);
      const family = families.get(name!) ?? { name: name!, type: 'untyped', help: '', samples: [] };
      if (kind === 'TYPE') {
        if (family.type !== 'untyped') throw new Error(`family ${name} typed twice`);
        family.type = rest!;
      } else family.help = rest!;
      families.set(name!, family);
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!sample) throw new Error(`not a sample line: ${line}`);
    const [, name, labels, value] = sample;
    const family = familyOf(name!, families);
    if (!family) throw new Error(`sample ${name} of no declared family`);
    family.samples.push({
      name: name!,
      labels: labels ? parseLabels(labels, line) : {},
      value: parseValue(value!, line),
    });
  }
  return families;
}

/** The one sample of `name` whose labels include `labels`; fails when there is none or several. */
export function sampleValue(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const family = familyOf(name, families);
  const matching = (family?.samples ?? []).filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (matching.length > 1) throw new Error(`${matching.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return matching[0]?.value;
}
