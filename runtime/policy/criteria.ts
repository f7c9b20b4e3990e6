/**
 * Criterion leaves compiled once per plan into closures over a `PolicyInput`. Each returns a
 * three-valued truth: session criteria (docs/policy.md) are UNKNOWN for an anonymous request, so
 * negation can never turn "we do not know who you are" into access.
 */
import { BlockList, isIPv4 } from 'node:net';
import type { Criterion, DateMatcher, Day, ListMatcher, StringMatcher, TimeOfDayMatcher } from '../../compiler/plan/types.ts';
import type { Identity, RequestHeaders } from '../core/types.ts';
import { checkedEmail, parseEmail } from './email.ts';

/** Three-valued truth: false, true, unknown. */
export const F = 0;
export const T = 1;
export const U = 2;
export type Tri = typeof F | typeof T | typeof U;

/** What a policy sees of a request: the canonical request, the identity, and the connection. */
export interface PolicyInput {
  readonly identity: Identity | null;
  readonly method: string;
  /** The canonical path (never the query). */
  readonly path: string;
  readonly headers: RequestHeaders;
  /** The client address (docs/decisions.md §5): IPv4 dotted or IPv6 text, never IPv4-mapped. */
  readonly clientAddress: string;
  readonly clientCertificate: { readonly fingerprint: string; readonly valid: boolean } | null;
  readonly nowMs: number;
}

export type Leaf = (input: PolicyInput) => Tri;

/** Compiles one criterion leaf. Throws only on an IR the compiler cannot produce (a bug). */
export function compileCriterion(c: Criterion): Leaf {
  switch (c.name) {
    case 'accept':
      return () => T;
    case 'reject':
      return () => F;
    case 'authenticated_user':
      return (i) => (i.identity ? T : U);
    case 'email': {
      // Whole addresses in `is`/`in`/`not_in` are read like the identity's (domain lower-cased).
      const m = stringMatcher(mapWhole(c.match, (v) => parseEmail(v)?.address ?? v));
      return (i) => (i.identity ? tri(m(checkedEmail(i.identity.email) ?? '')) : U);
    }
    case 'domain': {
      // Domains compare case-insensitively: both sides lower-cased, every matcher.
      const m = stringMatcher(mapAll(c.match, (v) => v.toLowerCase()));
      return (i) => (i.identity ? tri(m(domainOf(i.identity.email))) : U);
    }
    case 'user': {
      const m = stringMatcher(c.match);
      return (i) => (i.identity ? tri(m(i.identity.user)) : U);
    }
    case 'groups': {
      const m = listMatcher(c.match);
      return (i) => (i.identity ? tri(m(i.identity.groups)) : U);
    }
    case 'claim': {
      const name = c.claim;
      // `claim/email` is the checked email, never the provider's raw claim (docs/policy.md "Emails").
      if (name === 'email') {
        const m = listMatcher(mapWhole(c.match, (v) => parseEmail(v)?.address ?? v));
        return (i) => (i.identity ? tri(m(emailValues(i.identity))) : U);
      }
      const m = listMatcher(c.match);
      return (i) => (i.identity ? tri(m(claimValues(i.identity, name))) : U);
    }
    case 'device': {
      const d = c.match;
      return (i) => {
        if (!i.identity) return U;
        const dev = i.identity.device;
        // Signed in, but no device authenticated in this session: unknown, as for an anonymous user
        // (docs/policy.md "`device`"): the browser is sent to register or authenticate one, never
        // let through by negation.
        if (!dev) return U;
        if (d.op === 'approved') return tri(dev.approved);
        if (d.op === 'not_approved') return tri(!dev.approved);
        if (d.op === 'is') return tri(dev.id === d.value);
        // `type "any"` is every device; `enclave_only` a platform authenticator that verified its user.
        return tri(d.value === 'any' || dev.type === d.value);
      };
    }
    case 'http_method': {
      const m = stringMatcher(c.match);
      return (i) => tri(m(i.method));
    }
    case 'http_path': {
      const m = stringMatcher(c.match);
      return (i) => tri(m(i.path));
    }
    case 'cors_preflight':
      return (i) => tri(i.method === 'OPTIONS' && i.headers['origin'] !== undefined && i.headers['access-control-request-method'] !== undefined);
    case 'client_certificate': {
      const set = new Set(c.match.op === 'is' ? [c.match.value] : c.match.values);
      return (i) => tri(i.clientCertificate !== null && i.clientCertificate.valid && set.has(i.clientCertificate.fingerprint.toLowerCase()));
    }
    case 'invalid_client_certificate':
      return (i) => tri(i.clientCertificate !== null && !i.clientCertificate.valid);
    case 'source_ip': {
      const blocks = blockListOf(c.match.op === 'is' ? [c.match.value] : c.match.values);
      const negate = c.match.op === 'not_in';
      return (i) => {
        const hit = blocks.check(i.clientAddress, isIPv4(i.clientAddress) ? 'ipv4' : 'ipv6');
        return tri(negate ? !hit : hit);
      };
    }
    case 'date':
      return dateLeaf(c.match);
    case 'time_of_day':
      return timeOfDayLeaf(c.match);
    case 'day_of_week': {
      const days = new Set<Day>(c.match.op === 'is' ? [c.match.value] : c.match.values);
      const negate = c.match.op === 'not_in';
      const clock = localClock(c.match.timezone ?? 'UTC');
      return (i) => {
        const hit = days.has(clock(i.nowMs).day);
        return tri(negate ? !hit : hit);
      };
    }
  }
}

function tri(b: boolean): Tri {
  return b ? T : F;
}

/**
 * The lower-cased domain of an email address (runtime/policy/email.ts); `''` when there is no email
 * or it is not an address, so `x@evil.example@corp.example` has no domain at all.
 */
export function domainOf(email: string | undefined): string {
  return email === undefined ? '' : parseEmail(email)?.domain ?? '';
}

function emailValues(identity: Identity): readonly string[] {
  const email = checkedEmail(identity.email);
  return email === undefined ? [] : [email];
}

/** `m` with `f` applied to the values of `is`, `has`, `in` and `not_in` (the matchers of whole values). */
function mapWhole<M extends ListMatcher>(m: M, f: (v: string) => string): M {
  if (m.op === 'is' || m.op === 'has') return { ...m, value: f(m.value) };
  if (m.op === 'in' || m.op === 'not_in') return { ...m, values: m.values.map(f) };
  return m;
}

/** `m` with `f` applied to every value. */
function mapAll(m: StringMatcher, f: (v: string) => string): StringMatcher {
  return 'value' in m ? { ...m, value: f(m.value) } : { ...m, values: m.values.map(f) };
}

/**
 * The values of claim `name`: `claims[name]` if present, else the value reached by walking the
 * dotted name through nested objects. A list gives its scalar items as strings, a scalar one string,
 * anything else (null, objects) no value.
 */
export function claimValues(identity: Identity, name: string): readonly string[] {
  let v: unknown = Object.hasOwn(identity.claims, name) ? identity.claims[name] : undefined;
  if (v === undefined && name.includes('.')) {
    v = identity.claims;
    for (const part of name.split('.')) {
      if (v === null || typeof v !== 'object' || Array.isArray(v) || !Object.hasOwn(v, part)) return [];
      v = (v as Record<string, unknown>)[part];
    }
  }
  if (Array.isArray(v)) {
    const out: string[] = [];
    for (const x of v) if (isScalar(x)) out.push(String(x));
    return out;
  }
  return isScalar(v) ? [String(v)] : [];
}

function isScalar(v: unknown): v is string | number | boolean {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

function stringMatcher(m: StringMatcher): (s: string) => boolean {
  switch (m.op) {
    case 'is': {
      const v = m.value;
      return (s) => s === v;
    }
    case 'starts_with': {
      const v = m.value;
      return (s) => s.startsWith(v);
    }
    case 'ends_with': {
      const v = m.value;
      return (s) => s.endsWith(v);
    }
    case 'contains': {
      const v = m.value;
      return (s) => s.includes(v);
    }
    case 'in': {
      const set = new Set(m.values);
      return (s) => set.has(s);
    }
    case 'not_in': {
      const set = new Set(m.values);
      return (s) => !set.has(s);
    }
  }
}

/** A list matcher: `has`/`is` membership; other string matchers hold for some value; `not_in` negates `in`. */
function listMatcher(m: ListMatcher): (values: readonly string[]) => boolean {
  if (m.op === 'has' || m.op === 'is') {
    const v = m.value;
    return (values) => values.includes(v);
  }
  if (m.op === 'not_in') {
    const set = new Set(m.values);
    return (values) => !values.some((x) => set.has(x));
  }
  const one = stringMatcher(m);
  return (values) => values.some(one);
}

function blockListOf(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [addr = '', prefix = ''] = cidr.split('/');
    list.addSubnet(addr, Number(prefix), isIPv4(addr) ? 'ipv4' : 'ipv6');
  }
  return list;
}

function dateLeaf(m: DateMatcher): Leaf {
  const after = m.after === undefined ? -Infinity : Date.parse(m.after);
  const before = m.before === undefined ? Infinity : Date.parse(m.before);
  return (i) => tri(i.nowMs > after && i.nowMs < before);
}

function timeOfDayLeaf(m: TimeOfDayMatcher): Leaf {
  const after = m.after === undefined ? undefined : minutes(m.after);
  const before = m.before === undefined ? undefined : minutes(m.before);
  const clock = localClock(m.timezone ?? 'UTC');
  return (i) => {
    const t = clock(i.nowMs).minutes;
    if (after !== undefined && before !== undefined) return tri(after <= before ? t >= after && t < before : t >= after || t < before);
    if (after !== undefined) return tri(t >= after);
    return tri(before === undefined || t < before);
  };
}

function minutes(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

const WEEKDAY: Readonly<Record<string, Day>> = { Mon: 'mon', Tue: 'tue', Wed: 'wed', Thu: 'thu', Fri: 'fri', Sat: 'sat', Sun: 'sun' };

/** The local day and minute of day in `timeZone`; the formatter is built once per leaf (costly). */
function localClock(timeZone: string): (ms: number) => { day: Day; minutes: number } {
  const fmt = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  return (ms) => {
    let day: Day = 'mon';
    let h = 0;
    let min = 0;
    for (const p of fmt.formatToParts(ms)) {
      if (p.type === 'weekday') day = WEEKDAY[p.value] ?? day;
      else if (p.type === 'hour') h = Number(p.value);
      else if (p.type === 'minute') min = Number(p.value);
    }
    return { day, minutes: h * 60 + min };
  };
}
