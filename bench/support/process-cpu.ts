import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU ms of processes so far: the time on CPU that /proc/<pid>/task/<tid>/schedstat counts in ns (the ticks of
 * /proc/<pid>/stat are 10 ms, too coarse for a fraction of a ms per request), every thread, or only each
 * process's main thread (the event loop that serves HTTP: its task id is the pid).
 */
export function processCpuMs(pids: readonly number[], thread: 'all' | 'main' = 'all'): number {
  return pids.reduce((sum, pid) => {
    let ns = 0;
    for (const tid of thread === 'main' ? [String(pid)] : readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread ended meanwhile (its time is lost: a worker thread of V8 or libuv, rarely)
      }
    }
    return sum + ns / 1e6;
  }, 0);
}
