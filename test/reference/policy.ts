/**
 * Reference evaluation of the policy IR (docs/policy.md, rule book §4): a direct recursive
 * three-valued walk over the tree, no compilation, no short-circuit (every leaf is evaluated so
 * every leaf has its reason).
 */
import type { Criterion, Expr, PolicyIR } from '../../compiler/policy/ir.ts';
import type { Identity, Verdict } from '../../runtime/core/types.ts';
import { cidrContains, type IpAddress } from './ip.ts';

/** Three-valued truth: `unknown` is a session criterion seen by an anonymous request. */
export type Truth = 'true' | 'false' | 'unknown';

/** What a policy may look at besides the identity. */
export interface PolicyRequest {
  readonly method: string;
  /** The canonical path (never the query). */
  readonly path: string;
  readonly headers: Readonly<Record<string, readonly string[] | undefined>>;
  /** The client address (rule book §5). */
  readonly clientIp: IpAddress;
  readonly nowMs: number;
  readonly clientCertificate?: { readonly fingerprint: string; readonly valid: boolean };
}

/** The verdict of a policy and the reasons of the rules that decided it. */
export interface PolicyResult {
  readonly verdict: Verdict;
  readonly reasons: readonly string[];
}

interface Evaluated {
  readonly truth: Truth;
  /**
   * The reasons of the leaves that decide this value, depth first in written order (repeats kept;
   * removed when the decision is built): every part of a true `and` or a false `or`, else only the
   * parts with the node's own value.
   */
  readonly reasons: readonly string[];
}

/**
 * Evaluates a policy: every rule is evaluated; a true deny → deny; else an unknown deny →
 * unauthenticated; else a true allow → allow; else an unknown allow → unauthenticated; else deny.
 * The reasons are those of every rule in the deciding group, without repeats.
 */
export function evaluatePolicy(policy: PolicyIR, request: PolicyRequest, identity: Identity | null): PolicyResult {
  const rules = policy.rules.map((rule) => ({ action: rule.action, ...evaluate(rule.when, request, identity) }));
  const pick = (action: 'allow' | 'deny', truth: Truth) => rules.filter((r) => r.action === action && r.truth === truth);
  const groups: [readonly { reasons: readonly string[] }[], Verdict][] = [
    [pick('deny', 'true'), 'deny'],
    [pick('deny', 'unknown'), 'unauthenticated'],
    [pick('allow', 'true'), 'allow'],
    [pick('allow', 'unknown'), 'unauthenticated'],
  ];
  for (const [deciding, verdict] of groups) {
    if (deciding.length > 0) return { verdict, reasons: unique(deciding.flatMap((r) => r.reasons)) };
  }
  const allows = rules.filter((r) => r.action === 'allow');
  if (allows.length === 0) return { verdict: 'deny', reasons: ['no-matching-rule'] };
  return { verdict: 'deny', reasons: unique(allows.flatMap((r) => r.reasons)) };
}

function unique(xs: readonly string[]): string[] {
  const out: string[] = [];
  for (const x of xs) if (!out.includes(x)) out.push(x);
  return out;
}

/** Kleene three-valued logic over the tree. */
function evaluate(e: Expr, request: PolicyRequest, identity: Identity | null): Evaluated {
  switch (e.op) {
    case 'and': {
      const parts = e.args.map((a) => evaluate(a, request, identity));
      const truth: Truth = parts.some((p) => p.truth === 'false') ? 'false' : parts.some((p) => p.truth === 'unknown') ? 'unknown' : 'true';
      // Why: a false `and` because of its false parts, an unknown one because of its unknown parts.
      return { truth, reasons: parts.filter((p) => truth === 'true' || p.truth === truth).flatMap((p) => p.reasons) };
    }
    case 'or': {
      const parts = e.args.map((a) => evaluate(a, request, identity));
      const truth: Truth = parts.some((p) => p.truth === 'true') ? 'true' : parts.some((p) => p.truth === 'unknown') ? 'unknown' : 'false';
      // Why: a true `or` because of its true parts, an unknown one because of its unknown parts.
      return { truth, reasons: parts.filter((p) => truth === 'false' || p.truth === truth).flatMap((p) => p.reasons) };
    }
    case 'not': {
      const inner = evaluate(e.arg, request, identity);
      const truth: Truth = inner.truth === 'unknown' ? 'unknown' : inner.truth === 'true' ? 'false' : 'true';
      return { truth, reasons: inner.reasons };
    }
    case 'criterion': {
      const truth = criterion(e, request, identity);
      const name = e.name.replaceAll('_', '-');
      const reason = truth === 'true' ? `${name}-ok` : truth === 'false' ? `${name}-unauthorized` : identity !== null && e.name === 'device' ? 'device-unauthenticated' : 'user-unauthenticated';
      return { truth, reasons: [reason] };
    }
  }
}

const of = (b: boolean): Truth => (b ? 'true' : 'false');

/** One criterion leaf. Session criteria are unknown without an identity. */
function criterion(c: Criterion, request: PolicyRequest, identity: Identity | null): Truth {
  switch (c.name) {
    case 'accept':
      return 'true';
    case 'reject':
      return 'false';
    case 'authenticated_user':
      return identity === null ? 'unknown' : 'true';
    case 'user':
      return identity === null ? 'unknown' : of(stringMatch(c.match, [identity.user]));
    case 'email': {
      if (identity === null) return 'unknown';
      // Whole addresses in the matcher are read as addresses too; fragments stay as written.
      return of(stringMatch(wholeValues(c.match, (v) => emailAddress(v) ?? v), [emailAddress(identity.email) ?? '']));
    }
    case 'domain': {
      if (identity === null) return 'unknown';
      return of(stringMatch(allValues(c.match, (v) => v.toLowerCase()), [domainOf(identity.email)]));
    }
    case 'groups':
      return identity === null ? 'unknown' : of(stringMatch(c.match, identity.groups));
    case 'claim': {
      if (identity === null) return 'unknown';
      if (c.claim === 'email') {
        // `claim/email` is the checked email, as the `email` criterion sees it, never the raw claim.
        const email = emailAddress(identity.email);
        return of(stringMatch(wholeValues(c.match, (v) => emailAddress(v) ?? v), email === undefined ? [] : [email]));
      }
      return of(stringMatch(c.match, claimValues(identity.claims, c.claim)));
    }
    case 'device': {
      if (identity === null) return 'unknown';
      const d = identity.device;
      // docs/decisions.md §4: a signed-in session without a device is unknown, like no session.
      if (d === undefined) return 'unknown';
      const m = c.match;
      switch (m.op) {
        case 'approved':
          return of(d.approved);
        case 'not_approved':
          return of(!d.approved);
        case 'is':
          return of(d.id === m.value);
        case 'type':
          // `any` is every device.
          return of(m.value === 'any' || d.type === m.value);
      }
    }
    case 'http_method':
      return of(stringMatch(c.match, [request.method]));
    case 'http_path':
      return of(stringMatch(c.match, [request.path]));
    case 'cors_preflight':
      return of(request.method === 'OPTIONS' && hasHeader(request, 'origin') && hasHeader(request, 'access-control-request-method'));
    case 'client_certificate': {
      const cert = request.clientCertificate;
      if (cert === undefined || !cert.valid) return 'false';
      const m = c.match;
      return of(m.op === 'is' ? cert.fingerprint === m.value : m.values.includes(cert.fingerprint));
    }
    case 'invalid_client_certificate':
      return of(request.clientCertificate !== undefined && !request.clientCertificate.valid);
    case 'source_ip': {
      const m = c.match;
      if (m.op === 'is') return of(cidrContains(m.value, request.clientIp));
      const inAny = m.values.some((b) => cidrContains(b, request.clientIp));
      return of(m.op === 'in' ? inAny : !inAny);
    }
    case 'date': {
      const after = c.match.after === undefined || Date.parse(c.match.after) < request.nowMs;
      const before = c.match.before === undefined || request.nowMs < Date.parse(c.match.before);
      return of(after && before);
    }
    case 'time_of_day': {
      const now = localMinutes(request.nowMs, c.match.timezone ?? 'UTC');
      const after = c.match.after === undefined ? undefined : hhmmMinutes(c.match.after);
      const before = c.match.before === undefined ? undefined : hhmmMinutes(c.match.before);
      if (after !== undefined && before !== undefined && after > before) return of(now >= after || now < before); // wraps midnight
      return of((after === undefined || now >= after) && (before === undefined || now < before));
    }
    case 'day_of_week': {
      const day = localDay(request.nowMs, c.match.timezone ?? 'UTC');
      const m = c.match;
      if (m.op === 'is') return of(day === m.value);
      const inList = (m.values as readonly string[]).includes(day);
      return of(m.op === 'in' ? inList : !inList);
    }
  }
}

function hasHeader(request: PolicyRequest, name: string): boolean {
  const v = request.headers[name];
  return v !== undefined && v.length > 0;
}

/** RFC 5322 dot-atom (atext runs joined by single dots) `@` host name labels (docs/policy.md "Emails"). */
const ADDRESS = /^([A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]+(?:\.[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]+)*)@((?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)*[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)$/;

/**
 * An email as policy and upstreams read it: `local@domain` with the domain lower-cased when the text
 * is an address (at most 254 characters, local part at most 64, labels at most 63), else undefined:
 * no email at all.
 */
export function emailAddress(email: string | undefined): string | undefined {
  if (email === undefined || email.length > 254) return undefined;
  const m = ADDRESS.exec(email);
  if (m === null) return undefined;
  const [, local = '', domain = ''] = m;
  if (local.length > 64 || domain.split('.').some((label) => label.length > 63)) return undefined;
  return `${local}@${domain.toLowerCase()}`;
}

/** The lower-cased domain of an email that is an address; `""` otherwise. */
export function domainOf(email: string | undefined): string {
  const address = emailAddress(email);
  return address === undefined ? '' : address.slice(address.indexOf('@') + 1);
}

type AnyMatcher = Extract<Criterion, { name: 'groups' }>['match'];

/** `m` with its whole-value operands (`is`, `has`, `in`, `not_in`) passed through `f`. */
function wholeValues<M extends AnyMatcher>(m: M, f: (v: string) => string): M {
  switch (m.op) {
    case 'is':
    case 'has':
      return { ...m, value: f(m.value) };
    case 'in':
    case 'not_in':
      return { ...m, values: m.values.map(f) };
    default:
      return m;
  }
}

/** `m` with every operand passed through `f`. */
function allValues<M extends AnyMatcher>(m: M, f: (v: string) => string): M {
  return 'values' in m ? { ...m, values: m.values.map(f) } : { ...m, value: f(m.value) };
}

/**
 * String matchers over the values of a criterion (one value for single-string criteria): a matcher
 * holds when some value satisfies it; `not_in` is exactly `not in` (so it holds for no values).
 */
function stringMatch(m: Extract<Criterion, { name: 'groups' }>['match'], values: readonly string[]): boolean {
  switch (m.op) {
    case 'is':
    case 'has':
      return values.some((v) => v === m.value);
    case 'starts_with':
      return values.some((v) => v.startsWith(m.value));
    case 'ends_with':
      return values.some((v) => v.endsWith(m.value));
    case 'contains':
      return values.some((v) => v.includes(m.value));
    case 'in':
      return values.some((v) => m.values.includes(v));
    case 'not_in':
      return !values.some((v) => m.values.includes(v));
  }
}

/**
 * The values of claim `name`: `claims[name]` when that key is present, else the value found by
 * walking the dotted name through nested objects. A list gives its string/number/boolean items as
 * strings, a scalar one string, anything else (object, null, missing) no value. Only own properties
 * count: `claim/constructor` must not find `Object.prototype.constructor`.
 */
export function claimValues(claims: Readonly<Record<string, unknown>>, name: string): string[] {
  let value: unknown;
  if (Object.hasOwn(claims, name)) value = claims[name];
  else {
    let at: unknown = claims;
    for (const segment of name.split('.')) {
      if (at === null || typeof at !== 'object' || Array.isArray(at) || !Object.hasOwn(at, segment)) {
        at = undefined;
        break;
      }
      at = (at as Record<string, unknown>)[segment];
    }
    value = at;
  }
  const scalar = (v: unknown): string | undefined => (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined);
  if (Array.isArray(value)) return value.map(scalar).filter((v): v is string => v !== undefined);
  const one = scalar(value);
  return one === undefined ? [] : [one];
}

function hhmmMinutes(hhmm: string): number {
  const [h, m] = hhmm.split(':');
  return Number(h) * 60 + Number(m);
}

/** Minutes since local midnight in `timeZone` (seconds do not matter: bounds are whole minutes). */
function localMinutes(ms: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, hour: 'numeric', minute: 'numeric', hourCycle: 'h23' }).formatToParts(ms);
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  return get('hour') * 60 + get('minute');
}

/** The local day in `timeZone`, `mon`…`sun`. */
function localDay(ms: number, timeZone: string): string {
  return new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short' }).format(ms).toLowerCase();
}
