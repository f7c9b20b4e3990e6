/**
 * The symbolic request and identity of the exact check (docs/diff.md "Exact check"), and policy
 * programs encoded over it in Z3, with the three-valued semantics of runtime/policy/program.ts.
 *
 * Soundness rests on one rule: every real input (identity and request) is the image of some model,
 * so "unsat" proves that no real input separates two programs. The encoding may admit more than
 * the real inputs (a domain label longer than 63 characters, an offset a zone does not have at that
 * instant, a regex answer the regex would not give); such a model is caught when its witness is run
 * through the real programs, which is how every reported change is confirmed (check.ts).
 *
 * Variables:
 * - identity: `anon`; `user`; an email as `hasEmail`, `local`, `domain` (what the criteria see:
 *   `local@domain` with the domain lower-cased, runtime/policy/email.ts); groups as `slots` pairs
 *   (present, value); each claim name as its own slots; a device (`hasDevice`, id, type, approved).
 * - request: `method`, `path`, `cors` (the preflight headers are there), a client certificate
 *   (`hasCert`, `certValid`, fingerprint), the client address (`v6`, a 32- and a 128-bit vector),
 *   and `now` (an integer of milliseconds); each time zone named gets an offset variable.
 *
 * Sets as slots: a leaf over a list-valued criterion (`groups`, `claim/<name>`) asks whether some
 * value satisfies a predicate (`has`/`is`/`in`/string matchers) or none does (`not_in`). Given any
 * real list, keep one value per leaf whose "some value" holds: the leaves keep their truth (each
 * true existential keeps its witness; a sub-list cannot make a false one true). So as many slots as
 * leaves name the criterion cover every real list.
 */
import { SvcError } from '../../../runtime/core/errors.ts';
import type { Arith, BitVec, BitVecNum, Bool, Context, IntNum, Model, Seq } from 'z3-solver';
import type { Criterion, Expr, ListMatcher, PolicyIR, StringMatcher } from '../../../compiler/plan/types.ts';
import type { Identity } from '../../../runtime/core/types.ts';
import type { PolicyInput } from '../../../runtime/policy/criteria.ts';
import { parseEmail } from '../../../runtime/policy/email.ts';
import { MAX_TIME_MS, fixedOffset, zoneOffsets } from './zones.ts';

export type Z3 = Context<'main'>;
type B = Bool<'main'>;
type S = Seq<'main'>;
type I = Arith<'main'>;

/** A three-valued truth as two exclusive booleans: true, false (unknown is neither). */
interface Tri {
  readonly t: B;
  readonly f: B;
}

/** Something the encoding cannot express exactly; the check says "not proved" (check.ts). */
/** Something the encoding cannot express: the check answers "not proved" for it (check.ts). */
export class NotEncoded extends SvcError<'SVC_ERR_DIFF_NOT_ENCODED'> {
  constructor(message: string) {
    super('SVC_ERR_DIFF_NOT_ENCODED', message);
    this.name = 'NotEncoded';
  }
}

/** The largest character Z3 strings hold (its default Unicode range). */
const MAX_CHAR = 0x2ffff;

/** A Z3 string literal for `text`: every character as an escape, so nothing is read twice. */
export function lit(z: Z3, text: string): S {
  let out = '';
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if (c > MAX_CHAR) throw new NotEncoded(`a character beyond U+2FFFF in ${JSON.stringify(text)}`);
    out += (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) ? ch : `\\u{${c.toString(16)}}`;
  }
  return z.String.val(out);
}

/** The paths svc answers itself, before any route (runtime/request/route.ts). */
export const OWN_PATHS = ['/.svc', '/.well-known/svc'] as const;

/** True for a path svc answers itself: `/.svc`, `/.svc/…`, `/.well-known/svc`, `/.well-known/svc/…`. */
export function isOwnPath(path: string): boolean {
  return OWN_PATHS.some((own) => path === own || path.startsWith(`${own}/`));
}

/** The integer a model gives `x` (Z3 prints negative numbers as `(- n)`: read the value itself). */
export function intOf(m: Model<'main'>, x: I): number {
  return Number((m.eval(x, true) as IntNum<'main'>).value());
}

/** The string a model gives `s`, read one character code at a time (no escape syntax to parse). */
export function readString(z: Z3, m: Model<'main'>, s: S): string {
  const n = intOf(m, s.length());
  let out = '';
  for (let i = 0; i < n; i++) out += String.fromCodePoint(intOf(m, s.at(i).toCode()));
  return out;
}

interface Slots {
  readonly present: B[];
  readonly value: S[];
}

/** The symbolic input shared by every program of one query. */
export interface Input {
  readonly anon: B;
  readonly user: S;
  readonly hasEmail: B;
  readonly local: S;
  readonly domain: S;
  readonly groups: Slots;
  readonly claims: Map<string, Slots>;
  readonly hasDevice: B;
  readonly deviceId: S;
  readonly deviceType: S;
  readonly deviceApproved: B;
  readonly method: S;
  readonly path: S;
  readonly cors: B;
  readonly hasCert: B;
  readonly certValid: B;
  readonly fingerprint: S;
  readonly v6: B;
  readonly ip4: BitVec<32, 'main'>;
  readonly ip6: BitVec<128, 'main'>;
  readonly now: I;
  /** Time zone → its offset variable (ms), for zones with more than one offset. */
  readonly offsets: Map<string, I>;
  /** Facts every model must satisfy (domains of the variables). */
  readonly facts: B[];
  /** Facts of the same kind, left out until a model breaks them (check.ts adds them on a refutation). */
  readonly lazyFacts: { readonly email: B[]; readonly ownPath: B[] };
  /** The criteria the leaves use (`claim/email` counts as `email`): the variables they read. */
  used: ReadonlySet<string>;
}

function criteriaOfExpr(e: Expr, out: Criterion[]): void {
  if (e.op === 'criterion') out.push(e);
  else if (e.op === 'not') criteriaOfExpr(e.arg, out);
  else for (const a of e.args) criteriaOfExpr(a, out);
}

/** Every criterion leaf of some policies, in order. */
export function leavesOf(policies: readonly PolicyIR[]): Criterion[] {
  const out: Criterion[] = [];
  for (const p of policies) for (const r of p.rules) criteriaOfExpr(r.when, out);
  return out;
}

function charClass(z: Z3, ranges: readonly (readonly [number, number])[]) {
  return z.Union(...ranges.map(([a, b]) => z.Range(lit(z, String.fromCharCode(a)), lit(z, String.fromCharCode(b)))));
}

/** The fact that a method is an HTTP token. */
export function isMethodToken(z: Z3, method: S): B {
  return z.InRe(method, z.Plus(charClass(z, [[0x30, 0x39], [0x41, 0x5a], [0x61, 0x7a], ...[..."!#$%&'*+-.^_`|~"].map((c) => [c.charCodeAt(0), c.charCodeAt(0)] as const)])));
}

/** Declares the variables for queries over `policies` (slot counts and zones come from their leaves). */
export function makeInput(z: Z3, policies: readonly PolicyIR[], tag = ''): Input {
  const leaves = leavesOf(policies);
  const str = (n: string) => z.String.const(`${n}${tag}`);
  const bool = (n: string) => z.Bool.const(`${n}${tag}`);
  const slots = (n: string, k: number): Slots => ({
    present: Array.from({ length: k }, (_, i) => bool(`${n}.present.${i}`)),
    value: Array.from({ length: k }, (_, i) => str(`${n}.value.${i}`)),
  });
  const groupLeaves = leaves.filter((c) => c.name === 'groups').length;
  const claimCounts = new Map<string, number>();
  for (const c of leaves) if (c.name === 'claim' && c.claim !== 'email') claimCounts.set(c.claim, (claimCounts.get(c.claim) ?? 0) + 1);
  const claims = new Map<string, Slots>();
  let k = 0;
  for (const [name, count] of claimCounts) claims.set(name, slots(`claim${k++}`, count));
  const offsets = new Map<string, I>();
  for (const c of leaves) {
    if (c.name !== 'time_of_day' && c.name !== 'day_of_week') continue;
    const tz = c.match.timezone ?? 'UTC';
    if (offsets.has(tz) || fixedOffset(tz) !== undefined) continue;
    offsets.set(tz, z.Int.const(`offset${offsets.size}${tag}`));
  }
  const input: Input = {
    anon: bool('anon'),
    user: str('user'),
    hasEmail: bool('hasEmail'),
    local: str('local'),
    domain: str('domain'),
    groups: slots('group', groupLeaves),
    claims,
    hasDevice: bool('hasDevice'),
    deviceId: str('deviceId'),
    deviceType: str('deviceType'),
    deviceApproved: bool('deviceApproved'),
    method: str('method'),
    path: str('path'),
    cors: bool('cors'),
    hasCert: bool('hasCert'),
    certValid: bool('certValid'),
    fingerprint: str('fingerprint'),
    v6: bool('v6'),
    ip4: z.BitVec.const(`ip4${tag}`, 32),
    ip6: z.BitVec.const(`ip6${tag}`, 128),
    now: z.Int.const(`now${tag}`),
    offsets,
    facts: [],
    lazyFacts: { email: [], ownPath: [] },
    used: new Set(),
  };
  // Domains, for the variables the leaves read. Each admits every real value (module comment);
  // some admit a little more. Variables no leaf reads take a default in the witness.
  const used = new Set(leaves.map((c) => (c.name === 'claim' && c.claim === 'email' ? 'email' : c.name)));
  input.used = used;
  if (used.has('email') || used.has('domain')) {
    const atext = charClass(z, [[0x30, 0x39], [0x41, 0x5a], [0x61, 0x7a], ...[..."!#$%&'*+-/=?^_`{|}~"].map((c) => [c.charCodeAt(0), c.charCodeAt(0)] as const)]);
    const dot = z.Re.toRe(lit(z, '.'));
    const dotAtom = z.ReConcat(z.Plus(atext), z.Star(z.ReConcat(dot, z.Plus(atext))));
    const alnum = charClass(z, [[0x30, 0x39], [0x61, 0x7a]]);
    const label = z.ReConcat(alnum, z.Option(z.ReConcat(z.Star(z.Union(alnum, z.Re.toRe(lit(z, '-')))), alnum)));
    const host = z.ReConcat(label, z.Star(z.ReConcat(dot, label)));
    // Lazy: the regexes slow the string solver down much; a proof without them is a proof, and a
    // witness they would have excluded is refuted by the real program, which brings them in.
    input.lazyFacts.email.push(z.Implies(input.hasEmail, z.And(z.InRe(input.local, dotAtom), input.local.length().le(64), z.InRe(input.domain, host), input.local.length().add(input.domain.length()).le(253))));
  }
  // The canonical path is ASCII and starts with `/` (runtime/request/canonical-request.ts); its
  // other rules (no empty or dot segments) are left out: they cost the solver much, and no
  // criterion or matcher needs them.
  input.facts.push(z.InRe(input.path, z.ReConcat(z.Re.toRe(lit(z, '/')), z.Star(charClass(z, [[0x21, 0x22], [0x24, 0x3e], [0x40, 0x7e]])))));
  // svc's own paths never reach a route (runtime/request/route.ts `internalEndpoint`). Lazy, like
  // the email's shape: the solver is much slower with them, and rarely picks such a path.
  for (const own of OWN_PATHS) input.lazyFacts.ownPath.push(z.Not(input.path.eq(lit(z, own))), z.Not(lit(z, `${own}/`).prefixOf(input.path)));
  // A method is an HTTP token.
  if (used.has('http_method') || used.has('cors_preflight')) input.facts.push(isMethodToken(z, input.method));
  // The fingerprint as compared: lower-cased by the criterion.
  if (used.has('client_certificate')) input.facts.push(z.Not(z.InRe(input.fingerprint, z.ReConcat(z.Full(z.Re.sort(z.String.sort())), charClass(z, [[0x41, 0x5a]]), z.Full(z.Re.sort(z.String.sort()))))));
  if (used.has('date') || used.has('time_of_day') || used.has('day_of_week')) input.facts.push(input.now.ge(z.Int.val(-MAX_TIME_MS)), input.now.le(z.Int.val(MAX_TIME_MS)));
  for (const [tz, off] of offsets) input.facts.push(z.Or(...zoneOffsets(tz).map((o) => off.eq(o))));
  return input;
}

/** The encoding of one policy over an input. */
export class Encoder {
  constructor(
    private readonly z: Z3,
    private readonly input: Input,
    /** Uninterpreted answers for what is not encoded (see `regexAnswer`). */
    private readonly uf: (name: string, arg: S) => B,
  ) {}

  private tri(b: B): Tri {
    return { t: b, f: this.z.Not(b) };
  }

  private session(b: B): Tri {
    const z = this.z;
    return { t: z.And(z.Not(this.input.anon), b), f: z.And(z.Not(this.input.anon), z.Not(b)) };
  }

  /** `verdict(...) === 'allow'` of runtime/policy/program.ts: no deny rule true or unknown, some allow rule true. */
  allows(policy: PolicyIR): B {
    const z = this.z;
    // Slots are shared: each leaf ranges over all of its criterion's slots.
    const denies = policy.rules.filter((r) => r.action === 'deny').map((r) => this.expr(r.when));
    const allows = policy.rules.filter((r) => r.action === 'allow').map((r) => this.expr(r.when));
    return z.And(...denies.map((d) => d.f), z.Or(...allows.map((a) => a.t)));
  }

  expr(e: Expr): Tri {
    const z = this.z;
    switch (e.op) {
      case 'not': {
        const a = this.expr(e.arg);
        return { t: a.f, f: a.t };
      }
      case 'and': {
        const as = e.args.map((a) => this.expr(a));
        return { t: z.And(...as.map((a) => a.t)), f: z.Or(...as.map((a) => a.f)) };
      }
      case 'or': {
        const as = e.args.map((a) => this.expr(a));
        return { t: z.Or(...as.map((a) => a.t)), f: z.And(...as.map((a) => a.f)) };
      }
      case 'criterion':
        return this.criterion(e);
    }
  }

  private criterion(c: Criterion): Tri {
    const z = this.z;
    const i = this.input;
    switch (c.name) {
      case 'accept':
        return this.tri(z.Bool.val(true));
      case 'reject':
        return this.tri(z.Bool.val(false));
      case 'authenticated_user':
        return { t: z.Not(i.anon), f: z.Bool.val(false) };
      case 'email': {
        const m = mapWhole(c.match, (v) => parseEmail(v)?.address ?? v);
        const seen = z.If(i.hasEmail, i.local.concat(lit(z, '@')).concat(i.domain), lit(z, '')) as S;
        return this.session(this.string(m, seen));
      }
      case 'domain': {
        const m: StringMatcher = 'value' in c.match ? { ...c.match, value: c.match.value.toLowerCase() } : { ...c.match, values: c.match.values.map((v) => v.toLowerCase()) };
        return this.session(this.string(m, z.If(i.hasEmail, i.domain, lit(z, '')) as S));
      }
      case 'user':
        return this.session(this.string(c.match, i.user));
      case 'groups':
        return this.session(this.list(c.match, i.groups));
      case 'claim': {
        if (c.claim === 'email') {
          const m = mapWhole(c.match, (v) => parseEmail(v)?.address ?? v);
          const email = i.local.concat(lit(z, '@')).concat(i.domain);
          return this.session(this.list(m, { present: [i.hasEmail], value: [email] }));
        }
        return this.session(this.list(c.match, i.claims.get(c.claim)!));
      }
      case 'device': {
        // As runtime/policy/criteria.ts reads it: unknown when anonymous or when the session used no
        // device (never false: a negation must not let such a session through); `type "any"` is
        // every device.
        const d = c.match;
        const hit = d.op === 'approved' ? i.deviceApproved : d.op === 'not_approved' ? z.Not(i.deviceApproved) : d.op === 'is' ? i.deviceId.eq(lit(z, d.value)) : d.value === 'any' ? z.Bool.val(true) : i.deviceType.eq(lit(z, d.value));
        const known = z.And(z.Not(i.anon), i.hasDevice);
        return { t: z.And(known, hit), f: z.And(known, z.Not(hit)) };
      }
      case 'http_method':
        return this.tri(this.string(c.match, i.method));
      case 'http_path':
        return this.tri(this.string(c.match, i.path));
      case 'cors_preflight':
        return this.tri(z.And(i.method.eq(lit(z, 'OPTIONS')), i.cors));
      case 'client_certificate': {
        const values = c.match.op === 'is' ? [c.match.value] : c.match.values;
        return this.tri(z.And(i.hasCert, i.certValid, z.Or(...values.map((v) => i.fingerprint.eq(lit(z, v))))));
      }
      case 'invalid_client_certificate':
        return this.tri(z.And(i.hasCert, z.Not(i.certValid)));
      case 'source_ip': {
        const values = c.match.op === 'is' ? [c.match.value] : c.match.values;
        const hit = z.Or(...values.map((cidr) => this.inCidr(cidr)));
        return this.tri(c.match.op === 'not_in' ? z.Not(hit) : hit);
      }
      case 'date': {
        const parts: B[] = [];
        if (c.match.after !== undefined) parts.push(i.now.gt(z.Int.val(Date.parse(c.match.after))));
        if (c.match.before !== undefined) parts.push(i.now.lt(z.Int.val(Date.parse(c.match.before))));
        return this.tri(z.And(...parts));
      }
      case 'time_of_day': {
        const t = this.local(c.match.timezone ?? 'UTC').minute;
        const after = c.match.after === undefined ? undefined : minutes(c.match.after);
        const before = c.match.before === undefined ? undefined : minutes(c.match.before);
        let hit: B;
        if (after !== undefined && before !== undefined) hit = after <= before ? z.And(t.ge(after), t.lt(before)) : z.Or(t.ge(after), t.lt(before));
        else if (after !== undefined) hit = t.ge(after);
        else hit = before === undefined ? z.Bool.val(true) : t.lt(before);
        return this.tri(hit);
      }
      case 'day_of_week': {
        const day = this.local(c.match.timezone ?? 'UTC').day;
        const days = c.match.op === 'is' ? [c.match.value] : c.match.values;
        const hit = z.Or(...days.map((d) => day.eq(DAYS.indexOf(d))));
        return this.tri(c.match.op === 'not_in' ? z.Not(hit) : hit);
      }
    }
  }

  /** The local minute of day and day (0 = Monday) in a zone. 1970-01-01 was a Thursday. */
  private local(tz: string): { minute: I; day: I } {
    const z = this.z;
    const fixed = fixedOffset(tz);
    const off = fixed !== undefined ? z.Int.val(fixed) : this.input.offsets.get(tz);
    if (off === undefined) throw new NotEncoded(`time zone ${tz}`);
    const local = this.input.now.add(off);
    return { minute: local.div(60_000).mod(1440), day: local.div(86_400_000).add(3).mod(7) };
  }

  private string(m: StringMatcher, s: S): B {
    const z = this.z;
    switch (m.op) {
      case 'is':
        return s.eq(lit(z, m.value));
      case 'starts_with':
        return lit(z, m.value).prefixOf(s);
      case 'ends_with':
        return lit(z, m.value).suffixOf(s);
      case 'contains':
        return s.contains(lit(z, m.value));
      case 'in':
        return z.Or(...m.values.map((v) => s.eq(lit(z, v))));
      case 'not_in':
        return z.Not(z.Or(...m.values.map((v) => s.eq(lit(z, v)))));
    }
  }

  private list(m: ListMatcher, slots: Slots): B {
    const z = this.z;
    const some = (p: (s: S) => B) => z.Or(...slots.value.map((v, k) => z.And(slots.present[k]!, p(v))));
    if (m.op === 'has' || m.op === 'is') return some((v) => v.eq(lit(z, m.value)));
    if (m.op === 'not_in') return z.Not(some((v) => z.Or(...m.values.map((x) => v.eq(lit(z, x))))));
    return some((v) => this.string(m, v));
  }

  private inCidr(cidr: string): B {
    const z = this.z;
    const i = this.input;
    const [addr = '', lenText = ''] = cidr.split('/');
    const len = Number(lenText);
    if (addr.includes(':')) {
      const bits = ipv6Bits(addr);
      // An IPv4 client is inside an IPv6 block that holds its mapped form (node:net BlockList).
      const mapped = z.Concat(z.BitVec.val(0xffffn, 96), i.ip4);
      return z.If(i.v6, prefixEq(z, i.ip6, bits, len, 128), prefixEq(z, mapped as BitVec<128, 'main'>, bits, len, 128)) as B;
    }
    const bits = ipv4Bits(addr);
    // An IPv4-mapped IPv6 client is inside the IPv4 block of its IPv4 address.
    const mappedV4 = z.And(z.Extract(127, 32, i.ip6).eq(z.BitVec.val(0xffffn, 96)), prefixEq(z, z.Extract(31, 0, i.ip6) as BitVec<32, 'main'>, bits, len, 32));
    return z.If(i.v6, mappedV4, prefixEq(z, i.ip4, bits, len, 32)) as B;
  }

  /** Whether a route's path matcher holds (runtime/request/route.ts), regexes and case folding as an uninterpreted answer. */
  pathMatches(match: { kind: 'any' } | { kind: 'path'; path: string } | { kind: 'prefix'; prefix: string } | { kind: 'regex'; regex: string }, foldCase: boolean): B {
    const z = this.z;
    const p = this.input.path;
    if (match.kind === 'any') return z.Bool.val(true);
    if (match.kind === 'regex' || foldCase) return this.uf(matcherKey(match, foldCase), p);
    return match.kind === 'path' ? p.eq(lit(z, match.path)) : lit(z, match.prefix).prefixOf(p);
  }
}

/** The key of an uninterpreted path matcher: the same matcher in both plans is one function. */
export function matcherKey(match: { kind: string; path?: string; prefix?: string; regex?: string }, foldCase: boolean): string {
  return JSON.stringify([match.kind, match.path ?? match.prefix ?? match.regex ?? '', foldCase]);
}

const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;

function minutes(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

function mapWhole<M extends ListMatcher>(m: M, f: (v: string) => string): M {
  if (m.op === 'is' || m.op === 'has') return { ...m, value: f(m.value) };
  if (m.op === 'in' || m.op === 'not_in') return { ...m, values: m.values.map(f) };
  return m;
}

function prefixEq<N extends number>(z: Z3, v: BitVec<N, 'main'>, bits: bigint, len: number, width: number): B {
  if (len === 0) return z.Bool.val(true);
  return z.Extract(width - 1, width - len, v).eq(z.BitVec.val(bits >> BigInt(width - len), len));
}

export function ipv4Bits(addr: string): bigint {
  return addr.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

export function ipv6Bits(addr: string): bigint {
  let text = addr;
  // A trailing dotted IPv4 part (`::ffff:10.0.0.0`) is two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = ipv4Bits(dotted[1]!);
    text = `${text.slice(0, -dotted[1]!.length)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const hs = head === '' ? [] : head.split(':');
  const ts = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? hs : [...hs, ...Array(8 - hs.length - ts.length).fill('0'), ...ts];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

export function formatIpv4(bits: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => ((bits >> s) & 0xffn).toString()).join('.');
}

export function formatIpv6(bits: bigint): string {
  const groups = Array.from({ length: 8 }, (_, k) => ((bits >> BigInt(112 - 16 * k)) & 0xffffn).toString(16));
  return groups.join(':');
}

/** Defaults of a witness for what no leaf reads (docs/diff.md). */
const DEFAULT_ADDRESS = '192.0.2.1';
const NO_FINGERPRINT = '0'.repeat(64);
/** Monday 2025-01-06 12:00 UTC, the sampling's reference instant. */
const REFERENCE_MS = Date.UTC(2025, 0, 6, 12, 0);

/** A concrete identity and request: what a model says, in the runtime's types. */
export interface Witness {
  readonly identity: Identity | null;
  readonly request: Omit<PolicyInput, 'identity'>;
}

/** The witness a model gives (module comment); every named claim is set, empty when it has no value. */
export function witnessOf(z: Z3, m: Model<'main'>, i: Input): Witness {
  const b = (x: B) => m.eval(x, true).toString() === 'true';
  const s = (x: S) => readString(z, m, x);
  const slotValues = (sl: Slots) => sl.value.flatMap((v, k) => (b(sl.present[k]!) ? [s(v)] : []));
  const u = (...names: string[]) => names.some((n) => i.used.has(n));
  let identity: Identity | null = null;
  if (!b(i.anon)) {
    const claims: Record<string, string[]> = {};
    for (const [name, sl] of i.claims) Object.defineProperty(claims, name, { value: [...new Set(slotValues(sl))], enumerable: true, writable: true, configurable: true });
    identity = {
      user: u('user') ? s(i.user) : 'user',
      ...(u('email', 'domain') && b(i.hasEmail) ? { email: `${s(i.local)}@${s(i.domain)}` } : {}),
      groups: [...new Set(slotValues(i.groups))],
      claims,
      ...(u('device') && b(i.hasDevice) ? { device: { id: s(i.deviceId), type: s(i.deviceType), approved: b(i.deviceApproved) } } : {}),
    };
  }
  const method = u('http_method', 'cors_preflight') ? s(i.method) : 'GET';
  const bits = (x: BitVec<number, 'main'>) => (m.eval(x, true) as BitVecNum<number, 'main'>).value();
  const cors = u('cors_preflight') && b(i.cors);
  return {
    identity,
    request: {
      method,
      path: s(i.path),
      headers: cors ? { origin: ['https://origin.invalid'], 'access-control-request-method': ['GET'] } : {},
      clientAddress: !u('source_ip') ? DEFAULT_ADDRESS : b(i.v6) ? formatIpv6(bits(i.ip6)) : formatIpv4(bits(i.ip4)),
      clientCertificate: u('client_certificate', 'invalid_client_certificate') && b(i.hasCert) ? { fingerprint: u('client_certificate') ? s(i.fingerprint) : NO_FINGERPRINT, valid: b(i.certValid) } : null,
      nowMs: u('date', 'time_of_day', 'day_of_week') ? intOf(m, i.now) : REFERENCE_MS,
    },
  };
}
