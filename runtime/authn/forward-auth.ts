/**
 * The forward-authentication endpoints on `forward_auth_url` (docs/forward-auth.md): a third-party
 * proxy (nginx `auth_request`, Caddy `forward_auth`) asks whether a request may pass, naming it by
 * `?uri=<scheme>://<host><request_uri>`. The request is decided exactly as svc would
 * decide it itself (the same decision core, route table and policy), with the session of the
 * cookies or bearer token the proxy passes along.
 *
 * - allowed: 200, with `x-svc-jwt-assertion` and the `jwt_claims_headers` headers for a signed-in
 *   user on a route with `pass_identity_headers`, for the proxy to copy upstream (docs/forward-auth.md);
 * - denied: 403; no route for the URL: 403 (fail closed: nothing svc does not know passes);
 * - unauthenticated: `/verify` answers 401 (never a redirect); `/` redirects to sign in;
 * - a `uri` that cannot be rebuilt into a request: 400, never 200 (docs/security.md S12);
 * - a request for one of svc's own endpoints (`/.svc/…`, the authenticate or forward-auth host):
 *   403. svc answers those itself; the proxy routes them to svc, never to its upstream.
 *
 * The `uri` parameter (raw or percent-encoded form, told apart by what the proxy's configuration
 * writes), `X-Forwarded-Method`, and `x-svc-route-host` on every answer a route decided (for the
 * proxy to bind the check to its site): docs/forward-auth.md, "The endpoints" and "Binding the
 * check to the site".
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { canonicalize, decide, rule } from '../request/decide.ts';
import { sessionAndDecision, storeOutageDecision, type DecideSteps } from './admit.ts';
import type { ResolvedSession } from '../sessions/session-cache.ts';
import type { RemoteAuthorizer } from '../authorize/remote-authorizer.ts';
import type { PlanRef } from '../authorize/routes-checksum.ts';
import { authorizeUnavailableDecision } from '../authorize/remote-policy.ts';
import type { Decision, RequestHeaders } from '../core/types.ts';
import { acceptOf, sendError } from './error-page.ts';
import { identityHeaders } from './identity-headers.ts';
import type { PlanIndex } from '../plan/index.ts';
import type { AuthState } from './auth-state.ts';
import type { Authn, SignInRedirect } from './service.ts';
import { writeHead } from './write-head.ts';
import { planIndependent, shadowDifference, type ShadowDifference, type ShadowPlan } from '../request/shadow.ts';

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

/** `scheme://authority/path?query`: no fragment, no white space, no user info, a path or nothing. */
const URI = /^(https?):\/\/([A-Za-z0-9.\-[\]:]+)(\/[^#\s]*)?$/;
/** The raw form: `uri=` then a literal scheme and `://`, the value running to the end of the query. */
const RAW_URI = /^uri=(https?:\/\/.*)$/s;
/** A method as the proxy saw it: an upper-case token (RFC 9110 allows more; proxies pass these). */
const METHOD = /^[A-Z][A-Z0-9_-]{0,31}$/;

/** The `uri` a proxy names (raw or encoded form, see above), or undefined when there is not exactly one. */
export function forwardAuthUri(query: string): string | undefined {
  const raw = RAW_URI.exec(query);
  if (raw) return raw[1]!;
  const uris = new URLSearchParams(query).getAll('uri');
  return uris.length === 1 ? uris[0]! : undefined;
}

/**
 * Answers a forward-auth request (`path` is `/` or `/verify`, canonical). In the proxy role
 * (`remote`), the route's policy is decided by the authorize service, as for every request
 * (runtime/authorize/remote-policy.ts).
 */
export async function forwardAuth(
  authn: Authn,
  state: AuthState,
  index: PlanIndex,
  path: string,
  query: string,
  req: Req,
  res: Res,
  requestId: string,
  peer: string,
  remote?: { readonly authorizer: RemoteAuthorizer; readonly plan: PlanRef },
  shadow?: { readonly plan: ShadowPlan; readonly told: (d: ShadowDifference) => void },
): Promise<void> {
  const verify = path === '/verify';
  if (!verify && path !== '/') return fail(res, 404, requestId, 'no-such-endpoint', req);
  const uri = forwardAuthUri(query);
  const m = uri === undefined ? null : URI.exec(uri);
  if (!m) return fail(res, 400, requestId, 'forward-auth-uri-invalid', req);
  const scheme = m[1]!.toLowerCase() as 'http' | 'https';
  // A method svc cannot read would be decided as another one (a `delete` an upstream takes for
  // DELETE, decided as GET): refused, not guessed.
  const forwardedMethod = req.headers['x-forwarded-method'];
  if (forwardedMethod !== undefined && (typeof forwardedMethod !== 'string' || !METHOD.test(forwardedMethod))) return fail(res, 400, requestId, 'forward-auth-method-invalid', req);
  const method = forwardedMethod ?? 'GET';

  // The decided request: the proxy's headers (its cookies and credentials are the user's), with the
  // Host of the URI; the proxy's own forwarding headers are not the client's.
  const headers: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || k === 'host' || k.startsWith(':') || k === 'x-forwarded-method' || k === 'x-forwarded-uri' || k === 'x-forwarded-host') continue;
    headers[k] = Array.isArray(v) ? v : [v];
  }
  headers['host'] = [m[2]!];
  const target = m[3] ?? '/';
  // Normalized once: the same canonical host binds a bearer token and chooses the route.
  const canonical = canonicalize(index, { target, headers, scheme });
  const lookup = canonical.ok ? authn.resolve(state, headers as RequestHeaders, canonical.request.host) : null;
  // Session and decision as the gate's (admit.ts): the store's outage rule included (503 where a
  // session would matter: the user was not signed out).
  const steps: DecideSteps<Decision> = {
    decide: (session, policy) => decide(index, { method, target, scheme, headers, peer, nowMs: Date.now() }, session?.identity ?? null, { reasons: false, canonical, policy }),
    withoutStore: storeOutageDecision,
    remote: remote && { ...remote, unavailable: authorizeUnavailableDecision },
  };
  const { d, session } = await new Promise<{ d: Decision; session: ResolvedSession | null }>((resolve) => sessionAndDecision(lookup, steps, (d, session) => resolve({ d, session })));
  // The shadow plan (`svc run --shadow`) decides the checked request too; only `d` is answered.
  if (shadow !== undefined) {
    const differs = shadowDifference(shadow.plan, index, d, (candidate) => rule(candidate, { method, target, scheme, headers, peer, nowMs: Date.now() }, session?.identity ?? null, { reasons: false, canonical: planIndependent(canonical), template: false }));
    if (differs !== undefined) shadow.told(differs);
  }
  // The route that decided, for the proxy to compare with the site it protects (above).
  const routed: Record<string, string> = 'route' in d ? { 'x-svc-route-host': routeHost(index, d.route.index) } : {};
  switch (d.outcome) {
    case 'allow':
    case 'redirect': {
      const out: Record<string, string> = { 'cache-control': 'no-store', ...routed };
      // Identity only where the route passes it (`pass_identity_headers`, docs/configuration.md), as svc itself would.
      // The one identity step (identity-headers.ts): claims and assertion; no upstream credentials.
      const identity = await identityHeaders(state, { routeIndex: d.route.index, session, audience: routeHost(index, d.route.index), upstream: null });
      for (const name in identity) {
        const value = identity[name];
        if (typeof value === 'string') out[name] = value;
      }
      writeHead(res, 200, { ...out, 'content-length': '0' });
      res.end();
      return;
    }
    case 'unauthenticated': {
      if (d.device === true) {
        // Signed in, no device in this session: the device page on the route's host, which the
        // proxy routes to svc like every `/.svc/` path (docs/forward-auth.md); 401 from `/verify`.
        if (verify || d.location === null) return fail(res, 401, requestId, 'device-authentication-required', req, routed);
        writeHead(res, 302, { ...routed, location: d.location, 'cache-control': 'no-store', 'content-length': '0' });
        res.end();
        return;
      }
      const signIn = verify || d.location === null ? null : authn.signInRedirect(state, d.location);
      // Without an Accept naming HTML the core gives no location; `/` still sends a browser to sign in.
      // The proxy passes this answer to the browser on the route's host, binding cookie included.
      const redirect = verify ? null : (signIn ?? fallbackSignIn(authn, state, index, scheme, m[2]!, target));
      if (redirect === null) return fail(res, 401, requestId, 'sign-in-required', req, routed);
      writeHead(res, 302, { ...routed, location: redirect.location, 'cache-control': 'no-store', 'content-length': '0', ...(redirect.setCookie.length > 0 ? { 'set-cookie': [...redirect.setCookie] } : {}) });
      res.end();
      return;
    }
    case 'internal':
      // svc's own endpoint: svc answers it, the proxy's upstream never does (it is not protected
      // there). The proxy routes `/.svc/` to svc without asking (docs/forward-auth.md).
      return fail(res, 403, requestId, 'svc-endpoint', req);
    case 'deny':
      return fail(res, d.status, requestId, d.reasons.join(',') || 'denied', req, routed);
    case 'not_found':
      return fail(res, 403, requestId, 'no-route', req);
    case 'unavailable':
      // One reason: no healthy upstream, or the authorize service unreachable.
      return fail(res, 503, requestId, d.reasons[0] ?? 'no-healthy-upstream', req, routed);
    case 'bad_request':
      return fail(res, 400, requestId, d.problem, req);
  }
}

function fallbackSignIn(authn: Authn, state: AuthState, index: PlanIndex, scheme: string, host: string, target: string): SignInRedirect | null {
  if (index.signInOrigin === null) return null;
  return authn.signInRedirect(state, `${index.signInOrigin}/.svc/sign_in?svc_redirect_uri=${encodeURIComponent(`${scheme}://${host.toLowerCase()}${target}`)}`);
}

/** The audience of a route: its host, with the port when not the default (port specific). */
export function routeHost(index: PlanIndex, routeIndex: number): string {
  const from = index.body.routes[routeIndex]!.from;
  return from.port === null || from.port === 443 ? from.host : `${from.host}:${from.port}`;
}

function fail(res: Res, status: number, requestId: string, reason: string, req: Req, extra: Record<string, string> = {}): void {
  sendError(res, status, requestId, reason, acceptOf(req), false, extra);
}
