import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { resolveAllowedAddress, RefusedAddressError, type AddressRules, type Resolver } from './address-guard.ts';

/**
 * One delivery attempt: POST the body to the endpoint's URL, connected to an address the SSRF guard
 * checked, within a total timeout, never following a redirect. What came back is reported, never thrown:
 * the caller records every attempt and decides about retries.
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
  error: string | null;
}

export const RESPONSE_BODY_LIMIT = 1024;

export async function attemptDelivery(attempt: AttemptRequest, now: () => number = () => performance.now()): Promise<AttemptResult> {
  const started = now();
  const elapsed = () => Math.round(now() - started);
  let url: URL;
  try {
    url = new URL(attempt.url);
  } catch {
    return { ok: false, statusCode: null, durationMs: 0, responseBody: null, error: 'invalid URL' };
  }
  let target: { address: string; family: 4 | 6 };
  try {
    target = await resolveAllowedAddress(url.hostname, attempt.rules, attempt.resolve);
  } catch (error) {
    const message = error instanceof RefusedAddressError ? error.message : `DNS: ${(error as Error).message}`;
    return { ok: false, statusCode: null, durationMs: elapsed(), responseBody: null, error: message };
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
    const request = (secure ? httpsRequest : httpRequest)({
      // Connect to the checked address; the name still goes in Host and, for TLS, in SNI and the certificate check.
      host: target.address,
      family: target.family,
      port: url.port || (secure ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers: { ...attempt.headers, host: url.host, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(attempt.body)) },
      // SNI may not carry an IP address (RFC 6066); for an IP literal the certificate is checked against the address.
      ...(secure && isIP(hostname) === 0 ? { servername: hostname } : {}),
      agent: false,
    }, (response: IncomingMessage) => {
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
        finish({ ok, statusCode, responseBody: Buffer.concat(chunks).toString('utf8'), error: ok ? null : statusCode !== null && statusCode >= 300 && statusCode < 400 ? `redirect (${statusCode}) not followed` : `HTTP ${statusCode}` });
      };
      response.on('end', done);
      response.on('error', (error) => finish({ ok: false, statusCode: response.statusCode ?? null, responseBody: null, error: error.message }));
    });
    const timer = setTimeout(() => {
      finish({ ok: false, statusCode: null, responseBody: null, error: `timed out after ${attempt.timeoutMs} ms` });
      request.destroy();
    }, attempt.timeoutMs);
    request.on('error', (error) => finish({ ok: false, statusCode: null, responseBody: null, error: error.message }));
    request.end(attempt.body);
  });
}
