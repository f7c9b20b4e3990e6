/**
 * Where programmatic login (docs/authentication.md "Programmatic login") may send its token: a local client's callback. docs/security.md S05:
 * tokens go only to loopback or to host names listed in `programmatic_redirect_domain_whitelist`
 * (default `localhost`, which means the loopback addresses `localhost`, `127.0.0.1` and `[::1]`),
 * compared exactly after WHATWG URL parsing; never to user info, never to another scheme than
 * http(s), and to a listed non-loopback host only over https.
 */

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The normalized callback URL when it is an allowed programmatic target, else undefined. */
export function programmaticTarget(raw: string | null | undefined, whitelist: readonly string[]): string | undefined {
  if (typeof raw !== 'string' || raw === '' || raw.length > 2048) return undefined;
  // Control characters or white space anywhere: refused (as for every redirect target, S03).
  if (/[\u0000-\u0020\u007f-\u009f\s\\]/u.test(raw)) return undefined;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return undefined;
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.username !== '' || u.password !== '' || u.hash !== '') return undefined;
  const host = u.hostname.toLowerCase();
  const listed = new Set(whitelist.map((d) => d.toLowerCase()));
  if (listed.has('localhost') && LOOPBACK.has(host)) return u.href;
  if (!LOOPBACK.has(host) && listed.has(host) && u.protocol === 'https:') return u.href;
  return undefined;
}
