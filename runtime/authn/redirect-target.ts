/**
 * Where svc may send a user after sign-in or sign-out (`svc_redirect_uri` and friends). docs/security.md
 * S01–S04: only a same-origin path, or an absolute URL whose origin is exactly one svc serves;
 * anything else falls back to `/`. The checks read the target the way a browser will:
 *
 * - S03: the target is percent-decoded first, and a control character or white space anywhere (raw
 *   or decoded) refuses it (`/%09/evil.example` is `//evil.example` to some browsers);
 * - S02: `\` counts as `/` (`/\evil.example` is protocol-relative to a browser);
 * - S01: a path must start with exactly one `/` (not `//`, not `/\`);
 * - S04: an absolute URL must be `https` (or `http` when allowed), compared after WHATWG URL parsing,
 *   with no user info, and its origin must be one of `allowedOrigins` exactly.
 */

export interface RedirectPolicy {
  /** Exact origins (`https://app.example.com`, `https://app.example.com:8443`) svc serves. */
  readonly allowedOrigins: ReadonlySet<string>;
  /** Allow `http:` targets (only behind a TLS-terminating ingress in development). */
  readonly allowHttp?: boolean;
}

/** The fallback when a target is refused. */
export const FALLBACK_TARGET = '/';

const PLACEHOLDER = 'https://svc-redirect-check.invalid';

/** Returns `raw` as a safe redirect target (normalized), or `/` when it is not one. */
export function safeRedirectTarget(raw: string | null | undefined, policy: RedirectPolicy): string {
  if (typeof raw !== 'string' || raw === '' || raw.length > 4096) return FALLBACK_TARGET;
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return FALLBACK_TARGET;
  }
  if (hasControlOrSpace(raw) || hasControlOrSpace(decoded)) return FALLBACK_TARGET;
  const slashed = raw.replaceAll('\\', '/');

  if (slashed.startsWith('/')) {
    if (slashed.startsWith('//') || decoded.replaceAll('\\', '/').startsWith('//')) return FALLBACK_TARGET;
    let u: URL;
    try {
      u = new URL(slashed, PLACEHOLDER);
    } catch {
      return FALLBACK_TARGET;
    }
    // Defense in depth: whatever the path does, it must stay on the same origin.
    if (u.origin !== PLACEHOLDER) return FALLBACK_TARGET;
    return `${u.pathname}${u.search}${u.hash}`;
  }

  let u: URL;
  try {
    u = new URL(slashed);
  } catch {
    return FALLBACK_TARGET;
  }
  const schemeOk = u.protocol === 'https:' || (policy.allowHttp === true && u.protocol === 'http:');
  if (!schemeOk || u.username !== '' || u.password !== '') return FALLBACK_TARGET;
  return policy.allowedOrigins.has(u.origin) ? u.href : FALLBACK_TARGET;
}

function hasControlOrSpace(s: string): boolean {
  // C0 and C1 controls, DEL, and every Unicode white space (NBSP, line separators, …).
  return /[\u0000-\u0020\u007f-\u009f\s\u200b\u2028\u2029\ufeff]/u.test(s);
}
