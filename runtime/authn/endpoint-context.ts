/**
 * What svc's own endpoints (sign-in, callback, hand-off, sign-out, user page, programmatic login)
 * share: the process-wide context they run in, the checks of a redirect target, the page and
 * sign-in-failure writers (on top of error-page.ts and pages.ts, the one way svc writes its pages).
 * The protocol they implement together: docs/authentication.md.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { SessionStore } from '../core/session-store.ts';
import type { AuthState } from './auth-state.ts';
import { TUNNEL_AUDIENCE_PREFIX } from './credentials.ts';
import { acceptOf, sendAnswer, wantsJson } from './error-page.ts';
import { signInFailedAnswer, type SignInFailure } from './pages.ts';
import { FALLBACK_TARGET, safeRedirectTarget } from './redirect-target.ts';
import type { SessionResolver } from './session-resolver.ts';
import { writeHead } from './write-head.ts';

export type Req = IncomingMessage | Http2ServerRequest;
export type Res = ServerResponse | Http2ServerResponse;

/** The process-wide part of an endpoint call (one per `Authn`); the plan's part is the `AuthState`. */
export interface EndpointContext {
  readonly store: SessionStore;
  /** The credential cache and the store's outage grace (session-resolver.ts). */
  readonly sessions: SessionResolver;
  /** `http` with `insecure_server`, else `https`. */
  readonly scheme: 'http' | 'https';
  readonly now: () => number;
  readonly log: ((entry: Record<string, unknown>) => void) | undefined;
}

/**
 * Where "try again" goes when a failed sign-in has no validated target: this host's user info page,
 * which starts a sign-in and then shows who is signed in.
 */
const RETRY_FALLBACK = '/.svc/';

/** An absolute redirect target svc serves (S01–S04), or undefined. */
export function absoluteTarget(raw: string | undefined | null, state: AuthState): string | undefined {
  const t = safeRedirectTarget(raw, state.redirects);
  return t === FALLBACK_TARGET || t.startsWith('/') ? undefined : t;
}

/** `tcp+https://host:port` when `raw` is exactly a tcp route's target in this plan, else undefined. */
export function tunnelTarget(raw: string | undefined | null, state: AuthState): string | undefined {
  if (typeof raw !== 'string' || !raw.startsWith(TUNNEL_AUDIENCE_PREFIX)) return undefined;
  return state.tcpRouteHosts.has(raw.slice(TUNNEL_AUDIENCE_PREFIX.length)) ? raw : undefined;
}

/** The scheme of URLs back to a route host: `http` only with `insecure_server` and a non-Secure cookie. */
export function returnScheme(ctx: EndpointContext, state: AuthState): 'http' | 'https' {
  return ctx.scheme === 'http' && !state.cookie.secure ? 'http' : 'https';
}

/** A 200 page (or text) with its length. */
export function sendPage(res: Res, status: number, headers: Readonly<Record<string, string>>, body: string): void {
  writeHead(res, status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

/** A 302 that stores nothing in caches, with the cookies to set on the way (none: no `Set-Cookie`). */
export function sendRedirect(res: Res, location: string, cookies: string | readonly string[]): void {
  const setCookie = typeof cookies === 'string' ? { 'set-cookie': cookies } : cookies.length > 0 ? { 'set-cookie': [...cookies] } : {};
  writeHead(res, 302, { location, 'cache-control': 'no-store', ...setCookie });
  res.end();
}

/**
 * Answers a failed sign-in with its page and a "try again" link to `retry` (a validated target;
 * this host's `/.svc/` without one), and logs it with the same stable code.
 */
export function signInFailed(ctx: EndpointContext, res: Res, req: Req, requestId: string, reason: SignInFailure, retry: string | undefined, headers: Readonly<Record<string, string>> = {}, log: Record<string, unknown> = {}, detail?: string): void {
  ctx.log?.({ msg: 'sign-in failed', requestId, reason, ...log });
  sendAnswer(res, signInFailedAnswer(reason, requestId, retry ?? RETRY_FALLBACK, wantsJson(acceptOf(req)), detail), headers);
}
