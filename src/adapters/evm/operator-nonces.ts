import { backoffMs } from '../../shared/backoff.ts';

/**
 * Nonces for the operator account, which every executor process shares. Within a process, sends are
 * serialized through one queue, so concurrent submits get consecutive nonces and go out in order. Across
 * processes nothing can be shared, so a send the node refuses for its nonce (taken by another process, or a
 * gap left by a send that never arrived) resynchronizes from the chain's pending count and tries again.
 */
export interface NonceSource {
  /** The account's next nonce counting pending transactions (eth_getTransactionCount at `pending`). */
  pendingNonce(): Promise<number>;
}

/** A node's answer that means "that nonce is not yours to use": resync and send again. */
export function isNonceConflict(error: unknown): boolean {
  const text = errorText(error).toLowerCase();
  return /nonce too low|nonce too high|already known|replacement transaction underpriced|invalid nonce|nonce has already been used|known transaction|lower than the current nonce|higher than the next one expected/.test(
    text,
  );
}

function errorText(error: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = error, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth += 1) {
    const { message, details, shortMessage } = e as { message?: string; details?: string; shortMessage?: string };
    parts.push(message ?? '', details ?? '', shortMessage ?? '');
  }
  return parts.join(' ');
}

/**
 * The pause after a nonce conflict: 5 ms at first, at most 100 ms (the longest of the former linear schedule at
 * 20 conflicts).
 */
const CONFLICT_PAUSE = { firstMs: 5, maxMs: 100 };

export class OperatorNonces {
  private readonly source: NonceSource;
  private readonly maxConflicts: number;
  private next: number | null = null;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(source: NonceSource, maxConflicts = 20) {
    this.source = source;
    this.maxConflicts = maxConflicts;
  }

  /**
   * Sends with the next nonce. `send` must only hand the signed transaction to the node and return (not wait
   * for its receipt): the queue holds every other send until it returns.
   */
  send<T>(send: (nonce: number) => Promise<T>): Promise<T> {
    const turn = this.queue.then(() => this.sendInTurn(send));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private async sendInTurn<T>(send: (nonce: number) => Promise<T>): Promise<T> {
    for (let conflicts = 0; ; conflicts += 1) {
      this.next ??= await this.source.pendingNonce();
      const nonce = this.next;
      try {
        const result = await send(nonce);
        this.next = nonce + 1;
        return result;
      } catch (error) {
        // Whether the node kept the transaction is unknown: the chain's count is the only truth left.
        this.next = null;
        if (!isNonceConflict(error) || conflicts + 1 >= this.maxConflicts) throw error;
        // Another process is sending too: step aside a random moment so that its burst lands first.
        await new Promise((resolve) => setTimeout(resolve, backoffMs(conflicts + 1, CONFLICT_PAUSE)));
      }
    }
  }
}
