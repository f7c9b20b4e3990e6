/**
 * svc's credentials as a request carries them: the session cookie's name on a host, and the
 * programmatic bearer token (`Authorization: Bearer svc1.…`, or `Proxy-Authorization` on a CONNECT
 * to a `tcp+https` route). Read by the session resolver, set by the sign-in endpoints, taken out
 * of upstream requests by the identity-header step (identity-headers.ts).
 */
import type { RequestHeaders } from '../core/types.ts';
import type { AuthState } from './auth-state.ts';

/** The prefix of a programmatic-login bearer token (`Authorization: Bearer svc1.…`). */
export const PROGRAMMATIC_TOKEN_PREFIX = 'svc1.';
/** The audience prefix of a tunnel token: `tcp+https://host:port`, never a bare host. */
export const TUNNEL_AUDIENCE_PREFIX = 'tcp+https://';

/**
 * The session cookie's name on `host` (canonical, maybe with a port): the authenticate host keeps
 * its own (`__Host-` when Secure, see {@link AuthState.authenticateCookieName}); every route host
 * keeps `cookie_name`.
 */
export function sessionCookieName(state: AuthState, host: string): string {
  const auth = state.authenticateHost;
  if (auth === null || state.authenticateCookieName === state.cookie.name) return state.cookie.name;
  return host === auth || host.replace(/:(443|80)$/, '') === auth ? state.authenticateCookieName : state.cookie.name;
}

/** The programmatic bearer token of a request (`Authorization: Bearer svc1.…`), if any. */
export function programmaticCredential(headers: RequestHeaders): string | undefined {
  return bearerToken(headers['authorization']);
}

/** The token of a single `Bearer svc1.…` header value (`Authorization` or `Proxy-Authorization`). */
export function bearerToken(auth: readonly string[] | undefined): string | undefined {
  if (!auth || auth.length !== 1) return undefined;
  const v = auth[0]!;
  const prefix = `Bearer ${PROGRAMMATIC_TOKEN_PREFIX}`;
  return v.length > prefix.length && v.startsWith(prefix) ? v.slice(prefix.length) : undefined;
}
