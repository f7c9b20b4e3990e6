/**
 * fast-check generators of policy IR in normal form (ir.ts), and a test-only translation of IR into
 * the equivalent YAML policy document.
 *
 * The generators produce only what the surfaces can produce: `and`/`or` with two or more arguments,
 * non-empty strings without control characters, canonical CIDRs/instants/time zones/days/fingerprints,
 * non-empty date ranges with `after` < `before`, `time_of_day` bounds that differ. That is the whole
 * normalization the round-trip property relies on: nothing is normalized after generation.
 */
import fc from 'fast-check';
import { SocketAddress } from 'node:net';
import { DAYS, type Criterion, type Day, type Expr, type PolicyIR, type Rule } from '../../../compiler/policy/ir.ts';

const noControl = (s: string): boolean => s !== '' && !/[\u0000-\u001f\u007f]/.test(s);

/** Strings the printer must quote and the lexer must decode: any UTF-16, quotes, backslashes, keywords. */
export const valueString = (unit: 'binary' | 'grapheme' = 'binary'): fc.Arbitrary<string> =>
  fc
    .oneof(
      fc.string({ unit, minLength: 1, maxLength: 12 }),
      fc.string({ unit: fc.constantFrom('"', '\\', '/', ' ', 'a', '#', ';', '\u2028', ...(unit === 'binary' ? ['\ud800', '\udfff'] : [])), minLength: 1, maxLength: 6 }),
      fc.constantFrom('and', 'or', 'not', 'allow', 'if', 'true', 'a@example.com', 'example.com', '/admin'),
    )
    .filter(noControl);

const strings = (unit: 'binary' | 'grapheme'): fc.Arbitrary<string[]> => fc.array(valueString(unit), { minLength: 1, maxLength: 3 });

const stringMatcher = (unit: 'binary' | 'grapheme') =>
  fc.oneof(
    fc.record({ op: fc.constantFrom('is' as const, 'starts_with' as const, 'ends_with' as const, 'contains' as const), value: valueString(unit) }),
    fc.record({ op: fc.constantFrom('in' as const, 'not_in' as const), values: strings(unit) }),
  );

const cidr: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(fc.ipV4(), fc.integer({ min: 0, max: 32 })).map(([a, p]) => `${a}/${p}`),
  fc.tuple(fc.ipV6(), fc.integer({ min: 0, max: 128 })).map(([a, p]) => `${new SocketAddress({ address: a, family: 'ipv6' }).address}/${p}`),
);

const instantMs = fc.integer({ min: Date.parse('0000-01-01T00:00:00Z'), max: Date.parse('9999-12-31T23:59:59.999Z') });
const instant = (ms: number): string => new Date(ms).toISOString();
const hhmm = fc.tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(([h, m]) => `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`);
const timezone = fc.constantFrom('UTC', 'Europe/Paris', 'America/New_York', 'Asia/Tokyo', 'Australia/Sydney');
const hex64 = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 });
const day: fc.Arbitrary<Day> = fc.constantFrom(...DAYS);
const opt = <T>(key: string, a: fc.Arbitrary<T>): fc.Arbitrary<Record<string, T>> => fc.option(a, { nil: undefined }).map((v) => (v === undefined ? {} : { [key]: v }));

/** One criterion leaf of any kind, with canonical values. */
export const criterion = (unit: 'binary' | 'grapheme' = 'binary'): fc.Arbitrary<Criterion> =>
  fc.oneof(
    fc.constantFrom('accept', 'reject', 'authenticated_user', 'cors_preflight', 'invalid_client_certificate').map((name): Criterion => ({ op: 'criterion', name })),
    fc.record({ name: fc.constantFrom('domain', 'email', 'user', 'http_method', 'http_path'), match: stringMatcher(unit) }).map((x): Criterion => ({ op: 'criterion', ...x })),
    fc.oneof(stringMatcher(unit), fc.record({ op: fc.constant('has' as const), value: valueString(unit) })).map((match): Criterion => ({ op: 'criterion', name: 'groups', match })),
    fc
      .tuple(valueString(unit), fc.oneof(stringMatcher(unit), fc.record({ op: fc.constant('has' as const), value: valueString(unit) })))
      .map(([claim, match]): Criterion => ({ op: 'criterion', name: 'claim', claim, match })),
    fc
      .oneof(
        fc.record({ op: fc.constantFrom('is' as const, 'type' as const), value: valueString(unit) }),
        fc.constant({ op: 'approved' as const }),
        fc.constant({ op: 'not_approved' as const }),
      )
      .map((match): Criterion => ({ op: 'criterion', name: 'device', match })),
    fc
      .oneof(
        hex64.map((value) => ({ op: 'is' as const, value })),
        fc.array(hex64, { minLength: 1, maxLength: 2 }).map((values) => ({ op: 'in' as const, values })),
      )
      .map((match): Criterion => ({ op: 'criterion', name: 'client_certificate', match })),
    fc
      .oneof(fc.record({ op: fc.constant('is' as const), value: cidr }), fc.record({ op: fc.constantFrom('in' as const, 'not_in' as const), values: fc.array(cidr, { minLength: 1, maxLength: 3 }) }))
      .map((match): Criterion => ({ op: 'criterion', name: 'source_ip', match })),
    fc
      .oneof(
        instantMs.map((a) => ({ after: instant(a) })),
        instantMs.map((b) => ({ before: instant(b) })),
        fc.tuple(instantMs, instantMs).filter(([a, b]) => a !== b).map(([a, b]) => ({ after: instant(Math.min(a, b)), before: instant(Math.max(a, b)) })),
      )
      .map((m): Criterion => ({ op: 'criterion', name: 'date', match: { op: 'range', ...m } })),
    fc
      .tuple(
        fc.oneof(
          hhmm.map((after) => ({ after })),
          hhmm.map((before) => ({ before })),
          fc.tuple(hhmm, hhmm).filter(([a, b]) => a !== b).map(([after, before]) => ({ after, before })),
        ),
        opt('timezone', timezone),
      )
      .map(([m, tz]): Criterion => ({ op: 'criterion', name: 'time_of_day', match: { op: 'range', ...m, ...tz } })),
    fc
      .tuple(
        fc.oneof(
          day.map((value) => ({ op: 'is' as const, value })),
          fc.record({ op: fc.constantFrom('in' as const, 'not_in' as const), values: fc.array(day, { minLength: 1, maxLength: 3 }) }),
        ),
        opt('timezone', timezone),
      )
      .map(([m, tz]): Criterion => ({ op: 'criterion', name: 'day_of_week', match: { ...m, ...tz } })),
  );

/** A condition tree of bounded depth in normal form. */
export const expr = (unit: 'binary' | 'grapheme' = 'binary'): fc.Arbitrary<Expr> =>
  fc.letrec<{ e: Expr }>((tie) => ({
    e: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      criterion(unit),
      fc.record({ op: fc.constant('and' as const), args: fc.array(tie('e'), { minLength: 2, maxLength: 3 }) }),
      fc.record({ op: fc.constant('or' as const), args: fc.array(tie('e'), { minLength: 2, maxLength: 3 }) }),
      fc.record({ op: fc.constant('not' as const), arg: tie('e') }),
    ),
  })).e;

/** A whole policy (at least one rule: the text syntax has no empty policy). */
export const policy = (unit: 'binary' | 'grapheme' = 'binary'): fc.Arbitrary<PolicyIR> =>
  fc.array(fc.record({ action: fc.constantFrom('allow' as const, 'deny' as const), when: expr(unit) }), { minLength: 1, maxLength: 4 }).map((rules: Rule[]) => ({ rules }));

// ---------------------------------------------------------------------------------------------

/** The YAML policy document (as plain data) equivalent to an IR, one statement per rule. */
export function toDocument(ir: PolicyIR): unknown[] {
  return ir.rules.map((r) => ({ [r.action]: condition(r.when) }));
}

function condition(e: Expr): Record<string, unknown> {
  switch (e.op) {
    case 'and':
    case 'or':
      return { [e.op]: e.args.map(term) };
    case 'not':
      return { not: [term(e.arg)] };
    case 'criterion':
      return { or: [term(e)] };
  }
}

function term(e: Expr): Record<string, unknown> {
  if (e.op !== 'criterion') return condition(e);
  switch (e.name) {
    case 'accept':
    case 'reject':
    case 'authenticated_user':
    case 'cors_preflight':
    case 'invalid_client_certificate':
      return { [e.name]: true };
    case 'claim':
      return { [`claim/${e.claim}`]: matcherDoc(e.match) };
    case 'date':
    case 'time_of_day': {
      const { op: _op, ...rest } = e.match;
      return { [e.name]: rest };
    }
    case 'device':
      if (e.match.op === 'approved' || e.match.op === 'not_approved') return { device: { approved: e.match.op === 'approved' } };
      return { device: { [e.match.op]: e.match.value } };
    default:
      return { [e.name]: matcherDoc(e.match) };
  }
}

function matcherDoc(m: { readonly op: string; readonly value?: string; readonly values?: readonly string[]; readonly timezone?: string }): Record<string, unknown> {
  const out: Record<string, unknown> = { [m.op]: m.values ?? m.value };
  if (m.timezone !== undefined) out['timezone'] = m.timezone;
  return out;
}
