/**
 * A fetch that retries what the server asks to be retried: 429 (a rate limit; nothing was done) and 503 (a
 * store unreachable or a read model not ready) when they carry Retry-After, after waiting that long. A 503
 * without Retry-After (a corrupted store, which only an operator can mend) is not retried. A POST is retried
 * on 503 only when it carries an Idempotency-Key, so that a retry can never create an operation twice.
 * Bounded: at most `attempts` tries, and never a wait longer than `maxDelaySeconds`.
 */
export interface RetryOptions {
  /** Tries in all, the first included (default 3; 1 turns retries off). */
  attempts?: number;
  /** The longest Retry-After honoured, in seconds (default 30): a longer one is returned to the caller. */
  maxDelaySeconds?: number;
  /** How to wait (default setTimeout); tests pass their own. */
  sleep?: (ms: number) => Promise<void>;
}

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Retry-After as seconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

function retryable(request: Request, response: Response): boolean {
  if (response.status === 429) return true;
  return response.status === 503 && (request.method === 'GET' || request.headers.has('idempotency-key'));
}

export function retryingFetch(
  fetchImpl: (request: Request) => Promise<Response>,
  options: RetryOptions = {},
): (request: Request) => Promise<Response> {
  const { attempts = 3, maxDelaySeconds = 30, sleep = wait } = options;
  return async (request) => {
    for (let attempt = 1; ; attempt++) {
      // A request's body can be read once: each try sends a copy.
      const response = await fetchImpl(request.clone());
      if (attempt >= attempts || !retryable(request, response)) return response;
      const delay = retryAfterSeconds(response.headers.get('retry-after'));
      if (delay === undefined || delay > maxDelaySeconds) return response;
      await response.body?.cancel();
      await sleep(delay * 1000);
    }
  };
}
