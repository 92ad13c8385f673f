import { hash } from 'node:crypto';
import type { Response } from 'express';

/**
 * A GET's 200 as JSON with a weak ETag of its body, so that a client may revalidate with If-None-Match and
 * get 304 (express answers it, from req.fresh). The app turns express's own ETags off (src/http/app.ts):
 * they would also tag POST answers and problems, which no client can revalidate.
 */
export function sendJsonWithETag(res: Response, value: unknown): void {
  sendPreparedJson(res, preparedJson(value));
}

/** The same for a body already serialized (a list of stored texts): sent and tagged as it is. */
export function sendJsonTextWithETag(res: Response, text: string): void {
  sendPreparedJson(res, preparedJsonText(text));
}

/** A JSON answer serialized and tagged once, to be sent any number of times (the balances view keeps one per wallet). */
export interface PreparedJson {
  /**
   * Kept as text: express sends a short string with its headers in one write, where a Buffer takes a second
   * one (writev); a long one it turns into a Buffer itself.
   */
  body: string;
  etag: string;
}

export function preparedJson(value: unknown): PreparedJson {
  return preparedJsonText(JSON.stringify(value));
}

function preparedJsonText(body: string): PreparedJson {
  // One-shot hashing: no Hash object per answer.
  const digest = hash('sha1', body, 'base64url');
  return { body, etag: `W/"${Buffer.byteLength(body).toString(16)}-${digest}"` };
}

/** The header set directly, with its charset: express's res.type and res.set would look the type up again on each answer. */
const JSON_TYPE = 'application/json; charset=utf-8';

export function sendPreparedJson(res: Response, prepared: PreparedJson): void {
  res.setHeader('ETag', prepared.etag);
  res.setHeader('Content-Type', JSON_TYPE);
  res.send(prepared.body);
}
