/**
 * The access line of `svc run`: one per request (and two per CONNECT tunnel or websocket upgrade:
 * `open` and `close`), written straight into pino's destination in the format of svc's pino logger
 * (run-log.ts: string levels, RFC 3339 times): exactly the bytes that logger writes for the same
 * entry (its host and referer made safe), time and service label (property-tested against pino in
 * test/runtime/observe/log/access-line.test.ts), but for a lone surrogate half, which the line
 * escapes (`\ud800`) where pino writes it raw (lost as U+FFFD once in UTF-8). pino's generic
 * serializer was about a quarter of what svc adds per request on top of a bare Node proxy.
 *
 * CONTRACT (no secrets): an entry holds no header value except the Host, the User-Agent and the
 * Referer, no query string, no cookie or token; the path is the request target through
 * {@link pathOf} (no query, no userinfo), and the line's host and referer go through {@link hostOf}
 * and {@link refererOf} here (no userinfo, no query; whoever built the entry). The replay block
 * (`groups` … `identityCut`) holds only what a policy reads of the identity and the connection, no
 * secret and bounded in size (replay-attributes.ts).
 */
import type { ShadowDifference } from '../../request/shadow.ts';

/** The entry the request path produces once per request (runtime/proxy/handler.ts, upgrade.ts, connect.ts). */
export interface AccessEntry {
  // Optional fields may be present as undefined (the request path builds one literal, cheaper than
  // spreading conditional parts); an undefined field is left out of the line, as pino does.
  readonly msg: 'request' | 'upgrade' | 'tunnel';
  /** For upgrades and tunnels: the line written when it opens, and the one when it closes. */
  readonly event?: 'open' | 'close' | undefined;
  readonly requestId: string;
  /** The request's trace id (32 hex digits), when it is traced (docs/tracing.md). */
  readonly traceId?: string | undefined;
  readonly method: string | undefined;
  readonly host: string;
  /** The request target without its query (CONNECT: the authority). */
  readonly path: string;
  /** The route's `name`, else its index in the plan; absent when no route matched. */
  readonly route?: string | number | undefined;
  /** The status answered; 499 when the response was cut (client gone, or svc stopping). */
  readonly status: number;
  readonly ms: number;
  /** Bytes read from and written to the client for this exchange (see handler.ts for what they count). */
  readonly bytesIn?: number | undefined;
  readonly bytesOut?: number | undefined;
  /** The upstream's `host:port`, when the request was forwarded. */
  readonly upstream?: string | undefined;
  /** The client address as trusted per `xff_num_trusted_hops` (runtime/request/client-address.ts). */
  readonly client?: string | undefined;
  /** The `User-Agent` header, as sent. */
  readonly userAgent?: string | undefined;
  /** The `Referer` header as sent: the line has it through {@link refererOf} (no userinfo, no query). */
  readonly referer?: string | undefined;
  readonly user?: string | undefined;
  readonly email?: string | undefined;
  // Replay (`svc diff --replay`, docs/diff.md "Replaying real traffic"): what the policy read of
  // the identity and the connection besides `user`, `email` and `client`, never a secret; bounded
  // (replay-attributes.ts). One block: written together, after `email`.
  /** The session's groups as the decision saw them: present (maybe empty) whenever `user` is. */
  readonly groups?: readonly string[] | undefined;
  /** The claims the plan's policies read (`claim/NAME`), name → the values a policy sees (`[]`: none). */
  readonly claims?: Readonly<Record<string, readonly string[]>> | undefined;
  /** The device the session authenticated with: credential id (public), type, approved. */
  readonly device?: { readonly id: string; readonly type: string; readonly approved: boolean } | undefined;
  /** The client certificate presented: SHA-256 fingerprint, and whether the route's CA vouched for it. */
  readonly clientCert?: { readonly sha256: string; readonly valid: boolean } | undefined;
  /** For an OPTIONS request: whether it carried `Origin` and `Access-Control-Request-Method` (never their values). */
  readonly preflight?: boolean | undefined;
  /** Groups or claims were cut to keep the line bounded: such a line is not replayed exactly. */
  readonly identityCut?: true | undefined;
  /** The decision's outcome (`allow`, `deny`, …) or the gate's refusal problem. */
  readonly decision: string;
  /** The decision's reason codes, when it gave any. */
  readonly reasons?: readonly string[] | undefined;
  readonly plan: number;
  /** The response was cut before it was complete (never logged as the status it started with). */
  readonly cut?: true | undefined;
  /** Why it was cut, when svc knows: `shutdown` (the drain deadline). */
  readonly cutBy?: string | undefined;
  /**
   * The shadow plan's decision (`svc run --shadow`, runtime/request/shadow.ts), only when it
   * differs from the enforced one: `{"change":"allow_to_deny","outcome":"deny","route":"admin","reasons":[…]}`.
   */
  readonly shadow?: ShadowDifference | undefined;
}

/** pino's level numbers (what `proxy_log_level` compares); the line names them (`"info"`, `"warn"`). */
export const INFO = 30;
export const WARN = 40;

/**
 * `timeMs` (milliseconds since the epoch) in RFC 3339, UTC, with milliseconds
 * (`2026-11-28T10:00:00.123Z`): the `time` of every line. The date and second are formatted once per
 * second (a Date and toISOString then); within it a line costs only its milliseconds.
 */
export function isoTime(timeMs: number): string {
  const second = Math.floor(timeMs / 1000);
  if (second !== cachedSecond) {
    cachedSecond = second;
    cachedPrefix = new Date(second * 1000).toISOString().slice(0, -4); // `…T10:00:00.`
  }
  const ms = Math.floor(timeMs - second * 1000);
  return `${cachedPrefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`;
}
let cachedSecond = Number.NaN;
let cachedPrefix = '';

/** The level of an access line: warn for a 5xx answer or a cut response, else info. */
export function accessLevel(entry: AccessEntry): number {
  return entry.status >= 500 || entry.cut === true ? WARN : INFO;
}

/**
 * The line (with its newline) svc's pino logger would write for `entry` at `timeMs`, at `accessLevel`,
 * with the `service` label (runtime/observe/service-label.ts; `svc` in all-in-one mode).
 */
export function accessLine(e: AccessEntry, timeMs: number, service = 'svc'): string {
  let s = `{"level":"${accessLevel(e) === WARN ? 'warn' : 'info'}","time":"${isoTime(timeMs)}","service":${jsonString(service)},"msg":"${e.msg}"`;
  if (e.event !== undefined) s += `,"event":"${e.event}"`;
  s += `,"requestId":${jsonString(e.requestId)}`;
  if (e.traceId !== undefined) s += `,"traceId":${jsonString(e.traceId)}`;
  if (e.method !== undefined) s += `,"method":${jsonString(e.method)}`;
  // The host as received (Host, `:authority`, a CONNECT's authority) may carry userinfo: never logged.
  s += `,"host":${jsonString(hostOf(e.host))},"path":${jsonString(e.path)}`;
  if (e.route !== undefined) s += `,"route":${typeof e.route === 'number' ? e.route : jsonString(e.route)}`;
  s += `,"status":${e.status},"ms":${e.ms}`;
  if (e.bytesIn !== undefined) s += `,"bytesIn":${e.bytesIn}`;
  if (e.bytesOut !== undefined) s += `,"bytesOut":${e.bytesOut}`;
  if (e.upstream !== undefined) s += `,"upstream":${jsonString(e.upstream)}`;
  if (e.client !== undefined) s += `,"client":${jsonString(e.client)}`;
  if (e.userAgent !== undefined) s += `,"userAgent":${jsonString(e.userAgent)}`;
  // Where the client came from, without what a URL may carry that is not for a log (docs/logging.md).
  if (e.referer !== undefined) s += `,"referer":${jsonString(refererOf(e.referer))}`;
  if (e.user !== undefined) s += `,"user":${jsonString(e.user)}`;
  if (e.email !== undefined) s += `,"email":${jsonString(e.email)}`;
  if (e.groups !== undefined) s += `,"groups":${jsonStrings(e.groups)}`;
  if (e.claims !== undefined) s += `,"claims":${JSON.stringify(e.claims)}`;
  if (e.device !== undefined) s += `,"device":{"id":${jsonString(e.device.id)},"type":${jsonString(e.device.type)},"approved":${e.device.approved}}`;
  if (e.clientCert !== undefined) s += `,"clientCert":{"sha256":${jsonString(e.clientCert.sha256)},"valid":${e.clientCert.valid}}`;
  if (e.preflight !== undefined) s += `,"preflight":${e.preflight}`;
  if (e.identityCut === true) s += `,"identityCut":true`;
  s += `,"decision":${jsonString(e.decision)}`;
  if (e.reasons !== undefined && e.reasons.length > 0) s += `,"reasons":${jsonStrings(e.reasons)}`;
  s += `,"plan":${e.plan}`;
  if (e.cut === true) s += `,"cut":true`;
  if (e.cutBy !== undefined) s += `,"cutBy":${jsonString(e.cutBy)}`;
  // A small object of codes and a route name; as pino writes a nested object (JSON.stringify).
  if (e.shadow !== undefined) s += `,"shadow":${JSON.stringify(e.shadow)}`;
  return `${s}}\n`;
}

/**
 * A string as `JSON.stringify` writes it. Most of a line's strings (ids, hosts, addresses) need
 * no escape: quoting them directly costs half of `JSON.stringify`. Whether one does is read char by
 * char (a regular expression's call costs more than the short strings of a line): a quote, a
 * backslash, a control character or any surrogate half (paired or not) sends it to `JSON.stringify`.
 */
function jsonString(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return JSON.stringify(s);
  }
  return `"${s}"`;
}

/** An array of strings as `JSON.stringify` writes it (the decision's reasons, the groups). */
function jsonStrings(a: readonly string[]): string {
  if (a.length === 1) return `[${jsonString(a[0]!)}]`;
  let s = '[';
  for (let i = 0; i < a.length; i++) s += i === 0 ? jsonString(a[i]!) : `,${jsonString(a[i]!)}`;
  return `${s}]`;
}

/**
 * What the access line's `path` and the request span's `url.path` name for a raw request target
 * (docs/logging.md): the one place a target is made safe to log or trace. The query (and a
 * fragment) is cut at the first `?` or `#`; an absolute-form target (`https://alice:pw@host/x`) keeps
 * only its path, never its scheme, userinfo or authority; an authority-form target (CONNECT
 * `alice:pw@host:443`, or whatever else does not start with `/`) loses everything up to the last `@`
 * before its first `/`. A client can thus put no password or query into a log line or a span, on any
 * entry point (request, upgrade, CONNECT; HTTP/1.1 and HTTP/2), whether svc refuses the target or not.
 */
export function pathOf(target: string): string {
  const q = target.indexOf('?');
  const f = target.indexOf('#');
  const end = f >= 0 && (q < 0 || f < q) ? f : q >= 0 ? q : target.length;
  // Origin-form (`/…`) is nearly every request: only the query to cut.
  if (target.charCodeAt(0) === 0x2f) return end === target.length ? target : target.slice(0, end);
  const s = end === target.length ? target : target.slice(0, end);
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(s);
  if (scheme) {
    const slash = s.indexOf('/', scheme[0].length);
    return slash < 0 ? '/' : s.slice(slash);
  }
  const slash = s.indexOf('/');
  const at = (slash < 0 ? s : s.slice(0, slash)).lastIndexOf('@');
  return at < 0 ? s : s.slice(at + 1);
}

/**
 * An authority as logged or traced (a CONNECT's `host`, a span's `server.address`): without the
 * userinfo a client may have put before it (`alice:pw@host:443` → `host:443`).
 */
export function hostOf(authority: string): string {
  const at = authority.lastIndexOf('@');
  return at < 0 ? authority : authority.slice(at + 1);
}

/**
 * A `Referer` as logged: its origin, scheme and host (`https://alice:pw@app.example.com/a?t=x#f` →
 * `https://app.example.com`), never its userinfo, path, query or fragment: a path can hold a
 * secret as well as a query can (an identity provider's interaction id, a reset link's token), and
 * the origin is what tells where a request came from. A relative reference logs as empty. When an
 * `@` before the path comes after a `?` or `#` (no browser sends that: a `?` in a password, or an `@`
 * in a query), only the scheme is logged, since either reading could show a secret.
 */
export function refererOf(referer: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(referer);
  if (!scheme) return '';
  const start = scheme[0].length;
  let authorityEnd = referer.length;
  let slash = referer.length;
  for (let i = start; i < referer.length; i++) {
    const c = referer.charCodeAt(i);
    if (c === 0x2f) {
      slash = i;
      if (authorityEnd > i) authorityEnd = i;
      break;
    }
    if ((c === 0x3f || c === 0x23) && authorityEnd > i) authorityEnd = i; // ? #
  }
  const at = referer.lastIndexOf('@', slash - 1);
  if (at >= authorityEnd) return scheme[0];
  return scheme[0] + hostOf(referer.slice(start, authorityEnd));
}
