/**
 * Representative identities and requests for comparing two policies. The values a policy names
 * (groups, domains, emails, users, claim values, devices; methods, paths, addresses, certificates,
 * instants) split identities and requests into classes that every criterion treats alike, up to
 * the approximations noted below; one representative per class is enough to see who gains or loses
 * access.
 *
 * Approximations (documented in docs/diff.md): a class holds one named value (pairs of values are
 * added when few values are named); a named value stands for itself under `starts_with`,
 * `ends_with` and `contains`; instants come from date boundaries and a reference week.
 */
import type { Criterion, PolicyIR } from '../../compiler/plan/types.ts';
import { criteriaOf } from '../../compiler/index.ts';
import type { PolicyInput } from '../../runtime/policy/criteria.ts';
import type { Identity } from '../../runtime/core/types.ts';

/** One identity class and its representative (`null`: anonymous). */
export interface IdentityProbe {
  readonly label: string;
  readonly identity: Identity | null;
  /** The single-value classes this class combines (itself for a single-value class; empty otherwise). */
  readonly parts: readonly string[];
}

/** One representative request (everything of a policy input but the identity). */
export interface RequestProbe {
  readonly label: string;
  readonly input: Omit<PolicyInput, 'identity'>;
}

type Facet =
  | { readonly kind: 'group' | 'domain' | 'email' | 'user'; readonly value: string }
  | { readonly kind: 'claim'; readonly claim: string; readonly value: string }
  | { readonly kind: 'device'; readonly op: 'approved' | 'not_approved' | 'is' | 'type'; readonly value: string };

/** At most this many single-value classes get pairwise combinations (n·(n−1)/2 more classes). */
const MAX_FACETS_FOR_PAIRS = 8;

const DEFAULT_USER = 'svc-diff-user';
const DEFAULT_DOMAIN = 'unlisted.invalid';
const DEFAULT_DEVICE = 'svc-diff-device';

const show = (v: string): string => (/^[\w.@:/+*-]+$/.test(v) ? v : JSON.stringify(v));

function facetLabel(f: Facet): string {
  switch (f.kind) {
    case 'claim':
      return `claim/${show(f.claim)} ${show(f.value)}`;
    case 'device':
      return f.op === 'approved' || f.op === 'not_approved' ? `device ${f.op}` : `device ${f.op === 'is' ? 'id' : 'type'} ${show(f.value)}`;
    default:
      return `${f.kind} ${show(f.value)}`;
  }
}

function valuesOf(m: { readonly value?: string; readonly values?: readonly string[] }): readonly string[] {
  return m.values ?? (m.value === undefined ? [] : [m.value]);
}

function facetsOf(c: Criterion): Facet[] {
  switch (c.name) {
    case 'groups':
      return valuesOf(c.match).map((value) => ({ kind: 'group', value }));
    case 'domain':
    case 'email':
    case 'user': {
      const kind = c.name;
      return valuesOf(c.match).map((value) => ({ kind, value }));
    }
    case 'claim':
      return valuesOf(c.match).map((value) => ({ kind: 'claim', claim: c.claim, value }));
    case 'device':
      return [{ kind: 'device', op: c.match.op, value: c.match.op === 'approved' || c.match.op === 'not_approved' ? '' : c.match.value }];
    default:
      return [];
  }
}

function allCriteria(policies: readonly PolicyIR[]): Criterion[] {
  return policies.flatMap((p) => criteriaOf(p));
}

/** Two facets that one identity cannot both have (one email, one device). */
function conflict(a: Facet, b: Facet): boolean {
  const mail = (f: Facet) => f.kind === 'email' || f.kind === 'domain';
  return (mail(a) && mail(b)) || (a.kind === 'device' && b.kind === 'device') || (a.kind === 'user' && b.kind === 'user');
}

function identityOf(facets: readonly Facet[]): Identity {
  let user = DEFAULT_USER;
  let email = `${DEFAULT_USER}@${DEFAULT_DOMAIN}`;
  const groups: string[] = [];
  // Claim names are the config's text ("toString", "__proto__"): a map, made an object at the end.
  const claims = new Map<string, string[]>();
  let device: Identity['device'];
  for (const f of facets) {
    switch (f.kind) {
      case 'group':
        groups.push(f.value);
        break;
      case 'domain':
        email = `${DEFAULT_USER}@${f.value}`;
        break;
      case 'email':
        email = f.value;
        break;
      case 'user':
        user = f.value;
        break;
      case 'claim':
        claims.set(f.claim, [...(claims.get(f.claim) ?? []), f.value]);
        break;
      case 'device':
        device = {
          id: f.op === 'is' ? f.value : DEFAULT_DEVICE,
          type: f.op === 'type' ? f.value : DEFAULT_DEVICE,
          approved: f.op === 'approved',
        };
        break;
    }
  }
  const claimRecord: Record<string, string[]> = Object.fromEntries(claims);
  return device ? { user, email, groups, claims: claimRecord, device } : { user, email, groups, claims: claimRecord };
}

/**
 * The identity classes for comparing `policies`: one per value named in any of them (in the order
 * they are written), then "any authenticated user" (a user with none of those values), then
 * "anonymous", then pairs of compatible values when at most MAX_FACETS_FOR_PAIRS are named.
 */
export function identityProbes(policies: readonly PolicyIR[]): IdentityProbe[] {
  const facets = new Map<string, Facet>();
  for (const c of allCriteria(policies)) for (const f of facetsOf(c)) if (!facets.has(facetLabel(f))) facets.set(facetLabel(f), f);
  const out: IdentityProbe[] = [];
  for (const [label, f] of facets) out.push({ label, identity: identityOf([f]), parts: [label] });
  out.push({ label: 'any authenticated user', identity: identityOf([]), parts: [] });
  out.push({ label: 'anonymous', identity: null, parts: [] });
  const list = [...facets];
  if (list.length <= MAX_FACETS_FOR_PAIRS) {
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const [la, fa] = list[i]!;
        const [lb, fb] = list[j]!;
        if (!conflict(fa, fb)) out.push({ label: `${la} + ${lb}`, identity: identityOf([fa, fb]), parts: [la, lb] });
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Requests

/** The reference instant when no time criterion is named: Monday 2025-01-06 12:00 UTC. */
const BASE_MS = Date.UTC(2025, 0, 6, 12, 0);
const DAY_MS = 86_400_000;
/** The largest instant a `Date` holds. */
const MAX_TIME_MS = 8.64e15;
/** At most this many instants (date boundaries always kept; local-clock instants sampled). */
const MAX_INSTANTS = 48;
const DEFAULT_ADDRESS = '192.0.2.1';
const NO_CERT_FINGERPRINT = '0'.repeat(64);
/** Above this many combinations, request dimensions are varied one at a time (see `combinations`). */
const MAX_REQUEST_PROBES = 256;

interface MethodProbe {
  readonly method: string;
  readonly headers: PolicyInput['headers'];
  readonly label: string;
}

const uniq = <T>(xs: readonly T[]): T[] => [...new Set(xs)];

/**
 * The representative requests for comparing `policies`: the product of the methods named (plus
 * GET, plus a CORS preflight when `cors_preflight` is named), the paths named (plus `defaultPath`,
 * a path the route matches), the
 * addresses named (plus 192.0.2.1), client certificates (none, each named one, an invalid one) and
 * instants (see `instants`). Labels always start with method and path (`GET /`); other dimensions
 * show only when they have more than one value.
 */
export function requestProbes(policies: readonly PolicyIR[], defaultPath = '/'): RequestProbe[] {
  const cs = allCriteria(policies);
  const named = (name: Criterion['name']) => cs.some((c) => c.name === name);
  const methods: MethodProbe[] = uniq(['GET', ...cs.flatMap((c) => (c.name === 'http_method' ? valuesOf(c.match) : []))]).map((method) => ({ method, headers: {}, label: method }));
  if (named('cors_preflight')) {
    methods.push({ method: 'OPTIONS', headers: { origin: ['https://origin.invalid'], 'access-control-request-method': ['GET'] }, label: 'OPTIONS (CORS preflight)' });
  }
  const paths = uniq([defaultPath, ...cs.flatMap((c) => (c.name === 'http_path' ? valuesOf(c.match).map((p) => (p.startsWith('/') ? p : `/${p}`)) : []))]);
  const addresses = uniq([DEFAULT_ADDRESS, ...cs.flatMap((c) => (c.name === 'source_ip' ? valuesOf(c.match).map((cidr) => cidr.split('/')[0] ?? cidr) : []))]);
  const certs: (PolicyInput['clientCertificate'])[] = [null];
  if (named('client_certificate') || named('invalid_client_certificate')) {
    for (const c of cs) if (c.name === 'client_certificate') for (const fingerprint of valuesOf(c.match)) certs.push({ fingerprint, valid: true });
    certs.push({ fingerprint: NO_CERT_FINGERPRINT, valid: false });
  }
  const times = instants(cs);
  const certList = uniqCerts(certs);
  const sizes = [methods.length, paths.length, addresses.length, certList.length, times.length];
  const make = ([m, p, a, c, t]: readonly number[]): RequestProbe => {
    const method = methods[m!]!;
    const path = paths[p!]!;
    const clientAddress = addresses[a!]!;
    const clientCertificate = certList[c!]!;
    const nowMs = times[t!]!;
    const parts = [`${method.label} ${path}`];
    if (addresses.length > 1) parts.push(`from ${clientAddress}`);
    if (certList.length > 1) parts.push(certLabel(clientCertificate));
    if (times.length > 1) parts.push(`at ${new Date(nowMs).toISOString()}`);
    return { label: parts.join(' '), input: { method: method.method, path, headers: method.headers, clientAddress, clientCertificate, nowMs } };
  };
  return combinations(sizes).map(make);
}

/**
 * Index tuples over dimensions of the given sizes: the full product when it has at most
 * MAX_REQUEST_PROBES tuples, else each dimension varied alone with the others at their first value
 * (policies that combine many request criteria are then sampled, not covered).
 */
function combinations(sizes: readonly number[]): number[][] {
  const total = sizes.reduce((x, y) => x * y, 1);
  if (total > MAX_REQUEST_PROBES) {
    const out: number[][] = [sizes.map(() => 0)];
    sizes.forEach((n, d) => {
      for (let k = 1; k < n; k++) out.push(sizes.map((_, e) => (e === d ? k : 0)));
    });
    return out;
  }
  let out: number[][] = [[]];
  for (const n of sizes) out = out.flatMap((t) => Array.from({ length: n }, (_, k) => [...t, k]));
  return out;
}

function uniqCerts(certs: readonly PolicyInput['clientCertificate'][]): PolicyInput['clientCertificate'][] {
  const seen = new Set<string>();
  return certs.filter((c) => {
    const k = c === null ? '-' : `${c.fingerprint}/${c.valid}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

function certLabel(c: PolicyInput['clientCertificate']): string {
  if (c === null) return 'without client certificate';
  return c.valid ? `with client certificate ${c.fingerprint.slice(0, 12)}…` : 'with invalid client certificate';
}

/**
 * Instants: the reference instant, each `date` boundary ±1 ms (bounds are strict), and, when a
 * `time_of_day` or `day_of_week` criterion is named, for each of those anchors and each time zone
 * named, seven consecutive local days when `day_of_week` is named, else one (forward from an
 * `after` anchor, backward from a `before` one), at each `time_of_day` boundary and one minute
 * before it (noon without boundaries).
 */
function instants(cs: readonly Criterion[]): number[] {
  const anchors: { ms: number; dir: 1 | -1 }[] = [{ ms: BASE_MS, dir: 1 }];
  const out: number[] = [BASE_MS];
  for (const c of cs) {
    if (c.name !== 'date') continue;
    for (const [iso, dir] of [[c.match.after, 1], [c.match.before, -1]] as const) {
      if (iso === undefined) continue;
      const t = Date.parse(iso);
      out.push(t - 1, t + 1);
      anchors.push({ ms: t + dir, dir });
    }
  }
  const clock = cs.filter((c) => c.name === 'time_of_day' || c.name === 'day_of_week');
  const local: number[] = [];
  if (clock.length) {
    const zones = uniq(clock.map((c) => c.match.timezone ?? 'UTC'));
    const bounds = uniq(cs.flatMap((c) => (c.name === 'time_of_day' ? [c.match.after, c.match.before].filter((x): x is string => x !== undefined) : [])).map(minutesOf));
    const marks = bounds.length ? bounds.flatMap((m) => [m, m - 1]) : [12 * 60];
    const days = cs.some((c) => c.name === 'day_of_week') ? 7 : 1;
    for (const a of anchors) {
      for (const tz of zones) {
        for (let k = 0; k < days; k++) {
          const day = new Date(a.ms + a.dir * k * DAY_MS);
          for (const m of marks) local.push(localToUtc(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate(), m, tz));
        }
      }
    }
  }
  const valid = (t: number) => Number.isFinite(t) && Math.abs(t) <= MAX_TIME_MS;
  const core = uniq(out.filter(valid));
  const extra = uniq(local.filter(valid)).filter((t) => !core.includes(t)).sort((x, y) => x - y);
  // Keep every date boundary; sample the local-clock instants evenly beyond MAX_INSTANTS.
  const room = Math.max(MAX_INSTANTS - core.length, 0);
  const kept = extra.length <= room ? extra : Array.from({ length: room }, (_, k) => extra[Math.floor((k * extra.length) / room)]!);
  return [...core, ...kept].sort((x, y) => x - y);
}

function minutesOf(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Minutes `timeZone` is ahead of UTC at `ms`. */
function offsetMinutes(ms: number, timeZone: string): number {
  let fmt = formatters.get(timeZone);
  if (!fmt) {
    fmt = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    formatters.set(timeZone, fmt);
  }
  const p: Record<string, number> = {};
  for (const part of fmt.formatToParts(ms)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  const local = utcOf(p['year'] ?? 1970, (p['month'] ?? 1) - 1, p['day'] ?? 1, (p['hour'] ?? 0) * 60 + (p['minute'] ?? 0));
  let diff = local - Math.floor(ms / 60_000) * 60_000;
  // Years before 1 come back era-relative; an offset is within a day, so fold the year error away.
  if (Math.abs(diff) >= DAY_MS) diff = ((diff % DAY_MS) + DAY_MS + 12 * 3_600_000) % DAY_MS - 12 * 3_600_000;
  return Math.round(diff / 60_000);
}

/** `Date.UTC` without its two-digit-year rule (years 0–99 stay themselves). */
function utcOf(year: number, month: number, date: number, minutes: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month, date);
  d.setUTCHours(0, minutes, 0, 0);
  return d.getTime();
}

/** The UTC instant of local minute `minutes` (may be −1: the minute before midnight) on a date in `timeZone`. */
function localToUtc(year: number, month: number, date: number, minutes: number, timeZone: string): number {
  const guess = utcOf(year, month, date, minutes);
  const first = guess - offsetMinutes(guess, timeZone) * 60_000;
  return guess - offsetMinutes(first, timeZone) * 60_000;
}

