import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { resolveAllowedAddress, RefusedAddressError, type AddressRules, type Resolver } from './address-guard.ts';

/**
 * One delivery attempt: POST the body to the endpoint's URL, connected to an address the SSRF guard
 * checked, within a total timeout, never following a redirect. What came back is reported, never thrown:
 * the caller records every attempt and decides about retries.
 *
 * A failure is reported twice: `error`, a category that the delivery log shows to makers ("refused: address
 * not allowed", "host not found", "connection failed", "TLS handshake failed", "timed out", "HTTP 500"), and
 * `detail`, what happened, for the operator's log only. The delivery log must not tell a maker how internal
 * hosts resolve or answer: which addresses a name has, which ports refuse connections.
 */
export interface AttemptRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  rules: AddressRules;
  resolve?: Resolver;
}

export interface AttemptResult {
  /** A 2xx response. A 3xx (redirects are never followed), 4xx or 5xx is a failure. */
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  /** The first KiB of the response body, as UTF-8. */
  responseBody: string | null;
  /** What went wrong, as a category fit for makers; null when ok. */
  error: string | null;
  /** What went wrong in detail (resolved addresses, system errors): for the operator's log, never for makers. */
  detail: string | null;
}

/** The category of an error of the connection or of TLS (node's codes), for makers. */
function connectionCategory(error: Error & { code?: unknown }): string {
  const code = typeof error.code === 'string' ? error.code : '';
  return /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/.test(code) ||
    error.message.includes('certificate')
    ? 'TLS handshake failed'
    : 'connection failed';
}

const failure = (error: string, detail: string = error) => ({
  ok: false,
  statusCode: null,
  responseBody: null,
  error,
  detail,
});

export const RESPONSE_BODY_LIMIT = 1024;

export async function attemptDelivery(
  attempt: AttemptRequest,
  now: () => number = () => performance.now(),
): Promise<AttemptResult> {
  const started = now();
  const elapsed = () => Math.round(now() - started);
  let url: URL;
  try {
    url = new URL(attempt.url);
  } catch {
    return { ...failure('invalid URL'), durationMs: 0 };
  }
  let target: { address: string; family: 4 | 6 };
  try {
    target = await resolveAllowedAddress(url.hostname, attempt.rules, attempt.resolve);
  } catch (error) {
    const result =
      error instanceof RefusedAddressError
        ? failure(error.noAddress ? 'host not found' : 'refused: address not allowed', error.message)
        : failure('host not found', `DNS: ${(error as Error).message}`);
    return { ...result, durationMs: elapsed() };
  }
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const finish = (result: Omit<AttemptResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...result, durationMs: elapsed() });
    };
    const secure = url.protocol === 'https:';
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const request = (secure ? httpsRequest : httpRequest)(
      {
        // Connect to the checked address; the name still goes in Host and, for TLS, in SNI and the certificate check.
        host: target.address,
        family: target.family,
        port: url.port || (secure ? 443 : 80),
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: {
          ...attempt.headers,
          host: url.host,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(attempt.body)),
        },
        // SNI may not carry an IP address (RFC 6066); for an IP literal the certificate is checked against the address.
        ...(secure && isIP(hostname) === 0 ? { servername: hostname } : {}),
        agent: false,
      },
      (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        response.on('data', (chunk: Buffer) => {
          if (kept < RESPONSE_BODY_LIMIT) {
            chunks.push(chunk.subarray(0, RESPONSE_BODY_LIMIT - kept));
            kept += Math.min(chunk.length, RESPONSE_BODY_LIMIT - kept);
          }
        });
        const done = () => {
          const statusCode = response.statusCode ?? null;
          const ok = statusCode !== null && statusCode >= 200 && statusCode < 300;
          const error = ok
            ? null
            : statusCode !== null && statusCode >= 300 && statusCode < 400
              ? `redirect (${statusCode}) not followed`
              : `HTTP ${statusCode}`;
          finish({ ok, statusCode, responseBody: Buffer.concat(chunks).toString('utf8'), error, detail: error });
        };
        response.on('end', done);
        response.on('error', (error) =>
          finish({
            ...failure('connection failed', `response: ${error.message}`),
            statusCode: response.statusCode ?? null,
          }),
        );
      },
    );
    const timer = setTimeout(() => {
      finish(failure('timed out', `timed out after ${attempt.timeoutMs} ms`));
      request.destroy();
    }, attempt.timeoutMs);
    request.on('error', (error) => finish(failure(connectionCategory(error), error.message)));
    request.end(attempt.body);
  });
}
