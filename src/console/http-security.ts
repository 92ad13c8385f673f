import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';

/**
 * The browser-facing protections of the console, in one place: response headers, the cookie attributes,
 * and the two CSRF checks (where the request comes from, and the synchronizer token it carries).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

/**
 * One year. Sent only over HTTPS (a browser ignores it over HTTP); includeSubDomains is the operator's call, at the
 * proxy.
 */
export const STRICT_TRANSPORT_SECURITY = 'max-age=31536000';

export const securityHeaders: RequestHandler = (req, res, next) => {
  // req.secure follows TRUST_PROXY: the scheme the browser used, as the trusted proxy reports it.
  if (req.secure) res.set('Strict-Transport-Security', STRICT_TRANSPORT_SECURITY);
  res.set({
    'Content-Security-Policy': CONTENT_SECURITY_POLICY,
    'X-Content-Type-Options': 'nosniff',
    // same-origin, not no-referrer: with no-referrer browsers send `Origin: null` on same-origin POSTs.
    'Referrer-Policy': 'same-origin',
    'X-Frame-Options': 'DENY',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Resource-Policy': 'same-origin',
    'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=()',
  });
  next();
};

/** Pages can hold a one-time secret or another party's data: never kept by a cache or the back button. */
export const noStore = (res: Response) => res.set('Cache-Control', 'no-store');

export const SESSION_COOKIE = 'wo_console';
export const LOGIN_CSRF_COOKIE = 'wo_console_login';
export const COOKIE_PATH = '/console';

/**
 * Over HTTPS (req.secure follows TRUST_PROXY) a cookie is a `__Host-` cookie: the browser accepts it only with
 * Secure, Path=/ and no Domain, so neither a sibling subdomain nor a plain-HTTP response can set or shadow it.
 * Over plain HTTP (local use) it keeps its name and Path=/console.
 */
const cookieName = (req: Request, name: string) => (req.secure ? `__Host-${name}` : name);
const cookieOptions = (req: Request) => ({
  httpOnly: true,
  sameSite: 'strict' as const,
  path: req.secure ? '/' : COOKIE_PATH,
  secure: req.secure,
});

/** HttpOnly, SameSite=Strict; `__Host-`, Secure and Path=/ over HTTPS, Path=/console over HTTP. */
export function setCookie(req: Request, res: Response, name: string, value: string, maxAgeMs: number): void {
  res.cookie(cookieName(req, name), value, { ...cookieOptions(req), maxAge: maxAgeMs });
}

export function clearCookie(req: Request, res: Response, name: string): void {
  res.clearCookie(cookieName(req, name), cookieOptions(req));
}

/** One cookie's value from the Cookie header (its `__Host-` name over HTTPS); a malformed header gives nothing. */
export function readCookie(req: Request, name: string): string | undefined {
  const header = req.get('cookie');
  if (!header) return undefined;
  const wanted = cookieName(req, name);
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== wanted) continue;
    const value = part.slice(eq + 1).trim();
    return /^[A-Za-z0-9_-]{16,128}$/.test(value) ? value : undefined;
  }
  return undefined;
}

/** Compares two tokens in time that does not depend on where they differ (both are hashed to equal lengths). */
export function tokensEqual(presented: unknown, expected: string): boolean {
  if (typeof presented !== 'string' || presented.length === 0 || presented.length > 256) return false;
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * The request must come from a console page: browsers say so in Sec-Fetch-Site and Origin. A request that
 * carries neither (an old browser, a script) still has to present the synchronizer token.
 */
export function isSameOrigin(req: Request): boolean {
  const site = req.get('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin') return false;
  const origin = req.get('origin');
  if (origin === undefined) return true;
  // req.protocol and req.host follow TRUST_PROXY (X-Forwarded-Proto, X-Forwarded-Host) behind a proxy.
  return origin === `${req.protocol}://${req.host}`;
}
