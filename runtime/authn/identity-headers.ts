/**
 * The identity step: what an allowed request carries upstream as identity (docs/authentication.md,
 * "Identity upstream"), and nothing of svc's own credentials.
 */
import type { OutgoingHeaders } from '../core/types.ts';
import { PROGRAMMATIC_TOKEN_PREFIX } from './credentials.ts';

/** Removes svc's session cookie and programmatic token from headers bound upstream. */
export function stripCredentials(headers: OutgoingHeaders, cookieName: string): void {
  const cookie = headers['cookie'];
  if (typeof cookie === 'string' && cookie.includes(cookieName)) headers['cookie'] = withoutSvcCookies(cookie, cookieName);
  const auth = headers['authorization'];
  if (typeof auth === 'string' && auth.startsWith(`Bearer ${PROGRAMMATIC_TOKEN_PREFIX}`)) headers['authorization'] = undefined;
}

/**
 * A `Cookie` header without svc's session, sign-in and sign-in binding cookies (every copy of each:
 * a browser holding a host-only and a Domain cookie sends both); undefined when nothing is left.
 */
function withoutSvcCookies(cookie: string, cookieName: string): string | undefined {
  // The common case on every request: the header is svc's session cookie alone.
  if (cookie.startsWith(cookieName) && cookie.charCodeAt(cookieName.length) === 0x3d && !cookie.includes(';')) return undefined;
  const kept = cookie
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p !== '' && !p.startsWith(`${cookieName}=`) && !p.startsWith(`${cookieName}_signin_`) && !p.startsWith(`${cookieName}_bind_`));
  return kept.length === 0 ? undefined : kept.join('; ');
}

