/**
 * The signed sign-in link (`{auth}/.svc/sign_in?…&svc_expiry&svc_signature`, S05) and, for a
 * browser that will come back to a route host, the binding cookie that goes with it
 * (docs/authentication.md, "Login CSRF").
 */
import { randomBytes } from 'node:crypto';
import type { AuthState } from './auth-state.ts';
import { bindingCookie, bindingHash, SIGN_IN_LINK_TTL_MS } from './sign-in-cookies.ts';
import { signParams } from './signed-params.ts';

/** A browser sign-in: where to send the browser, and the cookies to set on the way. */
export interface SignInRedirect {
  readonly location: string;
  readonly setCookie: readonly string[];
}

/** The signed sign-in URL carrying `params`, valid for the link's life from `now`. */
export function signInUrl(state: AuthState, params: Record<string, string>, now: number): string {
  return `${state.authenticateOrigin}/.svc/sign_in?${signParams(params, state.keys!.params, now + SIGN_IN_LINK_TTL_MS).toString()}`;
}

/**
 * A sign-in for a browser that will come back to `params.svc_redirect_uri`. When that is a route
 * host (not the authenticate service), the sign-in is bound to this browser: a random value goes
 * into a short-lived cookie on the route host, its hash into the signed link, and from there into
 * the flow cookie and the hand-off, which the route host accepts only from a browser holding the
 * value (login CSRF: an attacker's own hand-off link opened by a victim sets nothing).
 */
export function browserSignIn(state: AuthState, params: Record<string, string>, now: number): SignInRedirect {
  const target = params['svc_redirect_uri'] ?? '';
  let origin: string | undefined;
  try {
    origin = new URL(target).origin;
  } catch {
    origin = undefined;
  }
  if (origin === undefined || origin === state.authenticateOrigin) return { location: signInUrl(state, params, now), setCookie: [] };
  // INVARIANT (csprng): the binding value is 256 random bits from node:crypto (docs/security.md S31).
  const value = randomBytes(32).toString('base64url');
  const binding = bindingHash(value);
  return { location: signInUrl(state, { ...params, svc_binding: binding }, now), setCookie: [bindingCookie(state, binding, value)] };
}
