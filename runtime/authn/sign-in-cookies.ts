/**
 * The cookies of a sign-in (docs/authentication.md): the session cookie on a host, the flow cookie
 * that carries the provider round trip's checks on the authenticate host, and the binding cookie
 * that ties a route host's hand-off to the browser that started the sign-in.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { SessionRecord } from '../core/session-store.ts';
import type { AuthState } from './auth-state.ts';
import { cookieDomainFor, HOST_PREFIX, readCookie, serializeCookie } from './cookies.ts';
import { sessionCookieName } from './credentials.ts';
import type { Req } from './endpoint-context.ts';
import { sealSessionCookie } from './session-cookie.ts';

/** How long a signed sign-in link stays valid. */
export const SIGN_IN_LINK_TTL_MS = 10 * 60_000;
/** How long the provider round trip may take (the flow cookie's life). */
export const FLOW_TTL_MS = 10 * 60_000;
/**
 * How long a sign-in binding cookie lives on the route host: the sign-in link's life plus the
 * provider round trip, so a sign-in that may still complete still finds its binding.
 */
export const BINDING_TTL_MS = SIGN_IN_LINK_TTL_MS + FLOW_TTL_MS;
/** Where a binding cookie is sent: only to the route host's hand-off, never to an upstream. */
const BINDING_COOKIE_PATH = '/.svc/callback';

/** The `Set-Cookie` value of `record`'s session cookie on `host`, living as long as the session. */
export function sessionCookie(state: AuthState, host: string, record: SessionRecord, now: number): string {
  const name = sessionCookieName(state, host);
  const value = sealSessionCookie({ handle: record.id, expiresAtMs: record.expiresAtMs }, state.cookieSecret!, name);
  return serializeCookie(name, value, { ...sessionCookieAttributes(state, host), maxAgeSeconds: (record.expiresAtMs - now) / 1000 });
}

/** The `Set-Cookie` value that clears the session cookie on `host`. */
export function clearedSessionCookie(state: AuthState, host: string): string {
  return serializeCookie(sessionCookieName(state, host), '', { ...sessionCookieAttributes(state, host), maxAgeSeconds: 0 });
}

/**
 * The session cookie's attributes on `host`: `SameSite=Lax` everywhere; host-only, `Path=/` and
 * `Secure` for the authenticate host's `__Host-` cookie; else `cookie_domain` when it covers `host`.
 */
function sessionCookieAttributes(state: AuthState, host: string) {
  const hostOnly = sessionCookieName(state, host).startsWith(HOST_PREFIX);
  return { maxAgeSeconds: 0, secure: state.cookie.secure, httpOnly: state.cookie.httpOnly, domain: hostOnly ? null : cookieDomainFor(host, state.cookie.domain), sameSite: 'Lax' as const };
}

/** A binding cookie: host-only, HttpOnly, sent only to `/.svc/callback` (`/` under a `__Host-` name). */
function bindingCookieAttributes(state: AuthState) {
  const path = state.cookie.name.startsWith(HOST_PREFIX) ? '/' : BINDING_COOKIE_PATH;
  return { maxAgeSeconds: 0, secure: state.cookie.secure, httpOnly: true, domain: null, path, sameSite: 'Lax' as const };
}

/** The hash of a binding value, as the signed link, the flow cookie and the hand-off carry it. */
export function bindingHash(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('base64url');
}

/** The binding cookie of one sign-in: named after its hash, so parallel sign-ins in several tabs do not collide. */
function bindingCookieName(state: AuthState, binding: string): string {
  return `${state.cookie.name}_bind_${binding.slice(0, 12).replace(/[^A-Za-z0-9_-]/g, '')}`;
}

/** The `Set-Cookie` value of a binding cookie holding `value` (whose hash is `binding`). */
export function bindingCookie(state: AuthState, binding: string, value: string): string {
  return serializeCookie(bindingCookieName(state, binding), value, { ...bindingCookieAttributes(state), maxAgeSeconds: BINDING_TTL_MS / 1000 });
}

/** The `Set-Cookie` value that clears the binding cookie of `binding`. */
export function clearedBindingCookie(state: AuthState, binding: string): string {
  return serializeCookie(bindingCookieName(state, binding), '', bindingCookieAttributes(state));
}

/** The request carries the binding cookie whose value hashes to `binding` (compared in constant time). */
export function bindingHeld(req: Req, state: AuthState, binding: string): boolean {
  const header = req.headers['cookie'];
  const value = readCookie(header === undefined ? undefined : [String(header)], bindingCookieName(state, binding));
  if (value === undefined || value === '') return false;
  const a = Buffer.from(bindingHash(value));
  const b = Buffer.from(binding);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The flow cookie of one sign-in: named after its state, so parallel sign-ins do not collide. */
export function flowCookieName(state: AuthState, stateParam: string): string {
  return `${state.cookie.name}_signin_${stateParam.slice(0, 12).replace(/[^A-Za-z0-9_-]/g, '')}`;
}

/** The `Set-Cookie` value of a flow cookie living `ttlMs` (0: cleared). */
export function flowCookie(state: AuthState, name: string, value: string, ttlMs: number): string {
  return serializeCookie(name, value, { maxAgeSeconds: ttlMs / 1000, secure: state.cookie.secure, httpOnly: true, domain: null, sameSite: 'Lax' as const });
}
