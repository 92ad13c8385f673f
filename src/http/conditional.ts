import { hash } from 'node:crypto';
import type { Response } from 'express';

/**
 * A GET's 200 as JSON with a weak ETag of its body, so that a client may revalidate with If-None-Match and
 * get 304 (express answers it, from req.fresh). The app turns express's own ETags off (src/http/app.ts):
 * they would also tag POST answers and problems, which no client can revalidate.
 */
export function sendJsonWithETag(res: Response, value: unknown): void {
  sendJsonTextWithETag(res, JSON.stringify(value));
}

/** The same for a body already serialized (a list of stored texts): sent and tagged as it is. */
export function sendJsonTextWithETag(res: Response, body: string): void {
  res.set('ETag', `W/"${Buffer.byteLength(body).toString(16)}-${hash('sha1', body, 'base64url')}"`).type('json').send(body);
}
