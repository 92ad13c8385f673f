import { createHash } from 'node:crypto';
import type { Response } from 'express';

/**
 * A GET's 200 as JSON with a weak ETag of its body, so that a client may revalidate with If-None-Match and
 * get 304 (express answers it, from req.fresh). The app turns express's own ETags off (src/http/app.ts):
 * they would also tag POST answers and problems, which no client can revalidate.
 */
export function sendJsonWithETag(res: Response, value: unknown): void {
  const body = JSON.stringify(value);
  const hash = createHash('sha1').update(body).digest('base64url').slice(0, 27);
  res.set('ETag', `W/"${Buffer.byteLength(body).toString(16)}-${hash}"`).type('json').send(body);
}
