import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { AppendResult } from '../../ports/event-store.ts';
import type { PreparedAppend } from './sqlite-append.ts';
import { type CommitReply, type CommitRequest, deserializeCommitError } from './sqlite-commit-protocol.ts';
import type { BatchTransaction, Outcome } from './sqlite-group-commit.ts';

/** The worker's module beside this one: .ts in a checkout, .js in the compiled image. */
const WORKER = new URL(`./sqlite-commit-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

interface Waiting {
  resolve: (outcomes: Array<Outcome<AppendResult[]>>) => void;
  reject: (error: unknown) => void;
}

/** After the thread stopped, how long batches commit on the event loop before a new thread is tried. */
const RESTART_DELAY_MS = 1000;

/**
 * The embedded event store's transactions, run on a thread of their own. better-sqlite3 is synchronous: on the
 * event loop, a group commit's statements and its fsync (the larger part of a create's CPU in the profiles, see
 * docs/benchmarks.md) stop every request of the process until the disk answers. On the thread, the event loop
 * keeps parsing, deciding and answering meanwhile, and the next batch gathers while this one is on its way to disk.
 * Durability is unchanged: an append's promise settles with the thread's answer, which comes after its COMMIT.
 * Chosen with EVENT_STORE_COMMITS=thread: it pays where a core is free for it; on the 2-core machines measured, shared
 * with the load generator, commits on the event loop (the default) answered more creates (docs/benchmarks.md).
 *
 * A thread takes a few hundred ms to start (it loads the adapter's modules), which a process that appends once
 * (most CLI commands) should neither wait for nor pay: batches commit on the event loop, on the store's own
 * connection, until the thread is up. It is started by the second batch, in the background, and takes over once
 * it has opened its connection. One batch is in flight at a time (GroupCommitter), so the two connections never
 * write at once.
 *
 * Should the thread die (it should not: every error of a batch is answered as such), the batch it had not answered
 * fails as unavailable, since whether it committed is not known (callers read the store again before deciding
 * anything); batches go on on the event loop, and a new thread is started a moment later.
 */
export class CommitThread {
  private worker: Worker | undefined;
  private ready = false;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 0;
  private batches = 0;
  private notBefore = 0;
  private closed = false;
  private readonly file: string;
  private readonly onEventLoop: BatchTransaction<PreparedAppend[], AppendResult[]>;

  constructor(file: string, onEventLoop: BatchTransaction<PreparedAppend[], AppendResult[]>) {
    this.file = file;
    this.onEventLoop = onEventLoop;
  }

  /** One batch in one transaction, on the thread once it is up: a BatchTransaction for the GroupCommitter. */
  readonly run = (
    requests: PreparedAppend[][],
  ): Array<Outcome<AppendResult[]>> | Promise<Array<Outcome<AppendResult[]>>> => {
    const worker = this.worker;
    if (!worker || !this.ready) {
      if (!worker && !this.closed && this.batches++ >= 1 && performance.now() >= this.notBefore)
        this.worker = this.start();
      return this.onEventLoop(requests);
    }
    const id = this.nextId++;
    // Referenced while an answer is awaited: a process whose last work is an append must not exit before it.
    worker.ref();
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, requests } satisfies CommitRequest);
    });
  };

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    if (worker) await worker.terminate();
  }

  private start(): Worker {
    const worker = new Worker(WORKER, { workerData: { file: this.file } });
    // Never keeps the process alive by itself (see run).
    worker.unref();
    worker.on('message', (reply: CommitReply | 'ready') => {
      if (reply === 'ready') this.ready = this.worker === worker;
      else this.answer(worker, reply);
    });
    worker.on('error', (error) => this.stopped(worker, error));
    worker.on('exit', (code) => this.stopped(worker, new Error(`the commit thread exited with code ${code}`)));
    return worker;
  }

  private answer(worker: Worker, reply: CommitReply): void {
    const waiting = this.waiting.get(reply.id);
    this.waiting.delete(reply.id);
    if (this.waiting.size === 0) worker.unref();
    if (!waiting) return;
    if ('error' in reply) return waiting.reject(deserializeCommitError(reply.error));
    waiting.resolve(
      reply.outcomes.map((outcome) =>
        outcome.ok ? outcome : { ok: false, error: deserializeCommitError(outcome.error) },
      ),
    );
  }

  private stopped(worker: Worker, cause: unknown): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    this.ready = false;
    this.notBefore = performance.now() + RESTART_DELAY_MS;
    // The group commit reports it as the port's unavailable error, with this as its cause.
    const failure = new Error('the event store commit thread stopped: whether the batch was committed is not known', {
      cause,
    });
    for (const waiting of this.waiting.values()) waiting.reject(failure);
    this.waiting.clear();
  }
}
