/**
 * The decision core's contract: what goes in (a request as the listener saw it, an identity or
 * none) and what comes out (route, outcome, reasons, the upstream request or the redirect). Pure
 * data, no sockets: the server, `svc explain`, `svc test`, the reference interpreter and
 * the benchmarks all speak these types.
 */

/**
 * A signed-in user as the session holds it. `claims` are the IdP's claims (JSON values); a claim
 * criterion reads `claims[name]`, else walks a dotted name through nested objects.
 */
export interface Identity {
  readonly user: string;
  readonly email?: string;
  readonly groups: readonly string[];
  readonly claims: Readonly<Record<string, unknown>>;
  /**
   * The device the session authenticated with (docs/authentication.md "Devices"), when there is
   * one: its credential id, its type (`enclave_only` or `any`) and whether it is approved.
   */
  readonly device?: { readonly id: string; readonly type: string; readonly approved: boolean };
}

/** Request headers: lower-case names, every value received (Node's `headersDistinct`). */
export type RequestHeaders = Readonly<Record<string, readonly string[] | undefined>>;

/** A request as the listener received it, before any normalization. */
export interface DecisionRequest {
  readonly method: string;
  /** The request target as received: origin-form `/p?q` or absolute-form `https://h/p?q`. */
  readonly target: string;
  /** How the request reached the listener: `https`, or `http` with `insecure_server`. */
  readonly scheme: 'http' | 'https';
  readonly headers: RequestHeaders;
  /** The TCP peer's address (IPv4, IPv6, or IPv4-mapped IPv6 as Node reports it). */
  readonly peer: string;
  /** The request time in ms since the epoch (for `date`, `time_of_day`, `day_of_week`). */
  readonly nowMs: number;
  /** The client certificate presented on the connection, if any. */
  readonly clientCertificate?: { readonly fingerprint: string; readonly valid: boolean };
  /**
   * A number in [0, 1) choosing among a route's upstreams by weight (cumulative weights in listed
   * order); 0 when absent. Load-balancing policies (docs/running.md "Load balancing and health") supply it.
   */
  readonly upstreamSample?: number;
}

/** Why a request was refused with 400 before any route was chosen. */
/**
 * Why a request was refused with 400: its target (§1), its Host, its client address (§5), or the
 * path its rewrites would forward (§6 step 5, §7).
 */
/** Why a request was refused with 400. Stable strings: they appear in logs and `svc explain`. */
export type TargetProblem =
  | 'target-not-origin-form'
  | 'target-invalid-character'
  | 'target-fragment'
  | 'target-backslash'
  | 'target-malformed-escape'
  | 'target-forbidden-escape'
  | 'target-path-parameter'
  | 'host-missing'
  | 'host-invalid'
  | 'host-conflict';

export type RequestProblem = TargetProblem | 'host-duplicate' | 'client-address-invalid' | 'forwarded-path-dot-segment';

/** A policy's verdict. "unauthenticated" means: sign in first (browser redirect or 401). */
export type Verdict = 'allow' | 'deny' | 'unauthenticated';

/** The request sent upstream: absolute URL, `Host`, and every header (lower-case names). */
export interface UpstreamRequest {
  readonly url: string;
  readonly host: string;
  /** Every header the upstream request carries, `host` included; duplicates joined (`, `, cookies `; `). */
  readonly headers: Readonly<Record<string, string>>;
  /** True when the runtime adds the signed `x-svc-jwt-assertion` (pass_identity_headers and a user). */
  readonly assertion: boolean;
}

/**
 * Headers on their way upstream, completed by the runtime (identity, request id, credentials taken
 * out): a name set to `undefined` is not sent (undici skips it), which spares a `delete` that would
 * turn the object into a slow dictionary on the hot path.
 */
export type OutgoingHeaders = Record<string, string | string[] | undefined>;

/** Where the chosen route sits in the plan. */
export interface RouteRef {
  readonly index: number;
  readonly id: string;
  readonly name: string | null;
}

/** The outcome of one request. `reasons` are stable strings (see runtime/policy/program.ts). */
export type Decision =
  | { readonly outcome: 'bad_request'; readonly status: 400; readonly problem: RequestProblem; readonly reasons: readonly string[] }
  /** `/.svc/…`, `/.well-known/svc/…`, the authenticate and forward-auth hosts: answered by svc itself. */
  | { readonly outcome: 'internal'; readonly status: 200; readonly endpoint: InternalEndpoint; readonly reasons: readonly string[] }
  | { readonly outcome: 'not_found'; readonly status: 404; readonly reasons: readonly string[] }
  | { readonly outcome: 'allow'; readonly status: 200; readonly route: RouteRef; readonly reasons: readonly string[]; readonly upstream: UpstreamRequest }
  | { readonly outcome: 'redirect'; readonly status: number; readonly route: RouteRef; readonly reasons: readonly string[]; readonly location: string }
  /** 450 "device not authorized" when the session's device does not meet a `device` criterion (reason `device-unauthorized`). */
  | { readonly outcome: 'deny'; readonly status: 403 | 450; readonly route: RouteRef; readonly reasons: readonly string[] }
  /** A forward route whose upstreams are all unhealthy (only with a load balancer; see `DecideOptions`). */
  | { readonly outcome: 'unavailable'; readonly status: 503; readonly route: RouteRef; readonly reasons: readonly string[] }
  /**
   * 302 to sign in for a browser (`location` set), 401 for an API client (`location` null).
   * `device`: the user is signed in but the session has no device; `location` is the device page.
   */
  | { readonly outcome: 'unauthenticated'; readonly status: 302 | 401; readonly route: RouteRef; readonly reasons: readonly string[]; readonly location: string | null; readonly device?: true };

/** Which of svc's own endpoints a request addressed. */
export interface InternalEndpoint {
  readonly service: 'proxy' | 'authenticate' | 'forward_auth';
  /** The canonical path. */
  readonly path: string;
}

/** How an upstream request ended, for the load balancer and outlier detection. */
export interface UpstreamOutcome {
  readonly status?: number;
  readonly error?: 'connect' | 'timeout' | 'reset';
}
