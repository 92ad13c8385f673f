import { hash } from 'node:crypto';
import type { Response } from 'express';

/**
 * A GET's 200 as JSON with a weak ETag of its body, so that a client may revalidate with If-None-Match and
 * get 304 (notModified below). The app turns express's own ETags off (src/http/app.ts):
 * they would also tag POST answers and problems, which no client can revalidate.
 */
export function sendJsonWithETag(res: Response, value: unknown): void {
  sendPreparedJson(res, preparedJson(value));
}

/** The same for a body already serialized (a list of stored texts): sent and tagged as it is. */
export function sendJsonTextWithETag(res: Response, text: string): void {
  sendPreparedJson(res, preparedJsonText(text));
}

/**
 * A JSON answer serialized and tagged once, to be sent any number of times (the balances view keeps one per wallet).
 */
export interface PreparedJson {
  /**
   * Kept as text: Node sends a short string with its headers in one write, where a Buffer takes a second one
   * (writev).
   */
  body: string;
  etag: string;
}

export function preparedJson(value: unknown): PreparedJson {
  return preparedJsonText(JSON.stringify(value));
}

function preparedJsonText(body: string): PreparedJson {
  // One-shot hashing: no Hash object per answer. The body's length in characters (not bytes, which Node measures
  // again when it sends the body: a list of 100 is 85 kB) only tells more bodies apart.
  const digest = hash('sha1', body, 'base64url');
  return { body, etag: `W/"${body.length.toString(16)}-${digest}"` };
}

/**
 * The header set directly, with its charset: express's res.type and res.set would look the type up again on each
 * answer.
 */
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * What express's res.send does with a string, without what it costs per answer here (parsing the content type
 * again to set its charset, measuring the body again): 304 with no body and no content headers when the
 * client's If-None-Match names this ETag, the headers alone for HEAD, else the body. Content-Length is Node's: it
 * measures a body sent whole by `end` and says so itself; a HEAD's is measured here.
 */
export function sendPreparedJson(res: Response, prepared: PreparedJson): void {
  res.setHeader('ETag', prepared.etag);
  if (notModified(res.req.method, res.req.headers['if-none-match'], prepared.etag)) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.setHeader('Content-Type', JSON_TYPE);
  if (res.req.method === 'HEAD') {
    res.setHeader('Content-Length', Buffer.byteLength(prepared.body));
    res.end();
  } else res.end(prepared.body, 'utf8');
}

/**
 * Whether a GET or HEAD that names `etag` in If-None-Match (weak comparison, RFC 9110 13.1.2) gets 304. Not
 * express's req.fresh: that answers 200 to any request with `Cache-Control: no-cache`, which browsers and Node's
 * fetch (undici) add to every conditional request they make. no-cache asks to revalidate with the origin, and a
 * conditional request is exactly that revalidation: answering 304 to it serves nothing from a cache.
 */
export function notModified(method: string | undefined, ifNoneMatch: string | undefined, etag: string): boolean {
  if ((method !== 'GET' && method !== 'HEAD') || ifNoneMatch === undefined) return false;
  const opaque = (tag: string) => (tag.startsWith('W/') ? tag.slice(2) : tag);
  const ours = opaque(etag);
  return ifNoneMatch.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || opaque(trimmed) === ours;
  });
}
