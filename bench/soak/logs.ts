import { readFileSync } from 'node:fs';
import type { Child } from './children.ts';

export interface LogSummary {
  child: string;
  lines: number;
  /** Lines mentioning "(injected)": the faults that surfaced in a log (a lower bound of those injected). */
  injected: number;
  warn: number;
  error: number;
  fatal: number;
  /** Log messages (pino `msg`) by count. */
  messages: Map<string, number>;
  /** error and fatal lines that mention no injected fault: worth reading. */
  errorsNotInjected: Map<string, number>;
}

const LEVELS: Record<number, 'warn' | 'error' | 'fatal'> = { 40: 'warn', 50: 'error', 60: 'fatal' };

/** Counts what a child's log file says, across all its restarts. */
export function summarizeLog(child: Child): LogSummary {
  const summary: LogSummary = {
    child: child.spec.name,
    lines: 0,
    injected: 0,
    warn: 0,
    error: 0,
    fatal: 0,
    messages: new Map(),
    errorsNotInjected: new Map(),
  };
  let text: string;
  try {
    text = readFileSync(child.logFile, 'utf8');
  } catch {
    return summary;
  }
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# soak:')) continue;
    summary.lines += 1;
    const injected = line.includes('(injected)');
    if (injected) summary.injected += 1;
    let entry: { level?: number; msg?: string; err?: { message?: string } };
    try {
      entry = JSON.parse(line);
    } catch {
      // not pino JSON (a stack trace, a message from node itself): counted as an error line below
      entry = { level: 50, msg: line.slice(0, 160) };
    }
    const level = LEVELS[entry.level ?? 0];
    if (level) summary[level] += 1;
    const msg = entry.msg ?? '(no msg)';
    summary.messages.set(msg, (summary.messages.get(msg) ?? 0) + 1);
    if ((entry.level ?? 0) >= 50 && !injected) {
      const key = `${msg}${entry.err?.message ? `: ${entry.err.message.slice(0, 160)}` : ''}`;
      summary.errorsNotInjected.set(key, (summary.errorsNotInjected.get(key) ?? 0) + 1);
    }
  }
  return summary;
}

/** The most frequent entries of a count map, as `count× text`. */
export function top(counts: Map<string, number>, n: number): string[] {
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([text, count]) => `${count}× ${text}`);
}
