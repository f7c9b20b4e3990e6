/**
 * The criterion validators shared by both policy surfaces. A surface (YAML/JSON documents in
 * lower-document.ts, the text syntax in to-ast.ts) turns what it read into a `RawCriterion` with
 * spans and config paths; `buildCriterion` checks it against the criterion table and builds the IR
 * leaf (or the `and` of leaves when several matchers are given), reporting every problem it finds.
 *
 * INVARIANT (one-checker): every semantic check on criteria lives here, so the two surfaces accept
 * exactly the same policies and report them with the same codes.
 */
import * as D from '../diagnostics/codes/policy.ts';
import type { DiagnosticDef } from '../diagnostics/define.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import { suggest } from '../schema/suggest.ts';
import type { Span } from '../source/source-file.ts';
import {
  CRITERION_NAMES,
  andOf,
  isBooleanCriterion,
  type BooleanCriterionName,
  type Day,
  type Expr,
  type ListMatcher,
  type SetOp,
  type StringCriterionName,
  type StringOp,
} from './ir.ts';
import {
  DAY_SUGGESTIONS,
  hasControlCharacter,
  minutesOf,
  parseCidr,
  parseDay,
  parseFingerprint,
  parseInstant,
  parseTimeOfDay,
  parseTimezone,
} from './values.ts';

/** A value as written in either surface, with its span and config path. */
export type RawValue =
  | { readonly kind: 'string'; readonly value: string; readonly untyped: boolean; readonly span: Span; readonly path: string }
  | { readonly kind: 'bool'; readonly value: boolean; readonly span: Span; readonly path: string }
  | { readonly kind: 'list'; readonly items: readonly RawValue[]; readonly span: Span; readonly path: string }
  /**
   * Anything else (number, null, map); `got` describes it for messages: `a number`; `scalar` is a
   * number's or null's written form (`1`, `null`), absent for a map.
   */
  | { readonly kind: 'other'; readonly got: string; readonly scalar?: string; readonly span: Span; readonly path: string };

/** One matcher as written: `is: "x"` in a document, `is "x"` in text (`value` absent when none was written). */
export interface RawMatcher {
  readonly name: string;
  readonly nameSpan: Span;
  readonly value: RawValue | undefined;
  readonly path: string;
}

/** A criterion as written, before any check. */
export interface RawCriterion {
  /** Which surface wrote it: text criteria without a matcher (`accept`) mean `true`. */
  readonly surface: 'document' | 'text';
  /** The name as written, `claim` for `claim/<name>`. */
  readonly name: string;
  readonly nameSpan: Span;
  /** For `claim`: the claim name after the slash (possibly empty), absent when no slash was written. */
  readonly claim?: { readonly value: string; readonly span: Span };
  /** A value given directly to the criterion (`email: "a@b"`, `accept: true`, `groups: [a, b]`). */
  readonly bare?: RawValue;
  /** Matchers, in written order. */
  readonly matchers: readonly RawMatcher[];
  /** The span of the whole criterion, for problems about it as a whole. */
  readonly span: Span;
  readonly path: string;
}

type Family = 'boolean' | 'string' | 'list' | 'device' | 'client_certificate' | 'source_ip' | 'date' | 'time_of_day' | 'day_of_week';

function familyOf(name: string): Family | undefined {
  if (isBooleanCriterion(name)) return 'boolean';
  switch (name) {
    case 'domain':
    case 'email':
    case 'user':
    case 'http_method':
    case 'http_path':
      return 'string';
    case 'groups':
    case 'claim':
      return 'list';
    case 'device':
    case 'client_certificate':
    case 'source_ip':
    case 'date':
    case 'time_of_day':
    case 'day_of_week':
      return name;
    default:
      return undefined;
  }
}

const STRING_OPS: readonly string[] = ['is', 'starts_with', 'ends_with', 'contains', 'in', 'not_in'];

/** The matchers each criterion family accepts, in the order docs/policy.md lists them. */
const MATCHERS: Readonly<Record<Family, readonly string[]>> = {
  boolean: [],
  string: STRING_OPS,
  list: ['has', ...STRING_OPS],
  device: ['is', 'type', 'approved', 'not_approved'],
  client_certificate: ['is', 'in', 'fingerprint'],
  source_ip: ['is', 'in', 'not_in'],
  date: ['after', 'before'],
  time_of_day: ['after', 'before', 'timezone'],
  day_of_week: ['is', 'in', 'not_in', 'timezone'],
};

/** The matchers a criterion accepts (empty for boolean criteria); undefined for an unknown criterion. */
export function matchersOf(name: string): readonly string[] | undefined {
  const f = familyOf(name);
  return f === undefined ? undefined : MATCHERS[f];
}

/** `` `a`, `b` or `c` `` for help texts. */
function listWords(words: readonly string[]): string {
  const w = words.map((x) => `\`${x}\``);
  return w.length <= 1 ? (w[0] ?? 'nothing') : `${w.slice(0, -1).join(', ')} or ${w[w.length - 1]}`;
}

function describe(v: RawValue | undefined): string {
  if (v === undefined) return 'no value';
  switch (v.kind) {
    case 'string':
      return 'a string';
    case 'bool':
      return 'a boolean';
    case 'list':
      return 'a list';
    case 'other':
      return v.got;
  }
}

/**
 * Checks one criterion and builds its IR: one leaf, or the `and` of one leaf per matcher when
 * several are given (`date`/`time_of_day` bounds and `timezone` combine into one leaf instead).
 * Returns undefined after reporting when anything is wrong.
 */
export function buildCriterion(c: RawCriterion, r: Reporter): Expr | undefined {
  return new Builder(c, r).build();
}

class Builder {
  private failed = false;
  private readonly label: string;

  constructor(
    private readonly c: RawCriterion,
    private readonly r: Reporter,
  ) {
    this.label = c.name === 'claim' && c.claim ? `claim/${c.claim.value}` : c.name;
  }

  build(): Expr | undefined {
    const c = this.c;
    const family = familyOf(c.name);
    if (family === undefined) {
      const candidates = CRITERION_NAMES.map((n) => (n === 'claim' ? 'claim/<name>' : n));
      this.r.report(D.PolicyUnknownCriterion, c.nameSpan, { name: c.name, suggestion: suggest(c.name, candidates) }, c.path);
      return undefined;
    }
    if (c.name === 'claim') {
      if (c.claim === undefined || c.claim.value === '') {
        this.r.report(D.PolicyEmptyClaimName, c.claim?.span ?? c.nameSpan, {}, c.path);
        this.failed = true;
      } else this.text(c.claim.value, 'claim name', c.claim.span, c.path);
    }
    if (family === 'boolean') return this.boolean();

    const matchers: RawMatcher[] = [...c.matchers];
    if (c.bare !== undefined) {
      const op = this.bareOp(family, c.bare);
      if (op === undefined) {
        this.r.report(
          D.PolicyWrongValueType,
          c.bare.span,
          { what: `criterion \`${this.label}\``, expected: family === 'date' || family === 'time_of_day' ? 'a map of `after`/`before`' : 'a string, a list or a map of matchers', got: describe(c.bare) },
          c.path,
        );
        return undefined;
      }
      matchers.unshift({ name: op, nameSpan: c.nameSpan, value: c.bare, path: c.path });
    }
    const allowed = MATCHERS[family];
    if (matchers.length === 0) {
      this.r.report(D.PolicyMissingMatcher, c.span, { criterion: this.label, allowed: listWords(allowed) }, c.path);
      return undefined;
    }
    for (const m of matchers) {
      if (!allowed.includes(m.name)) {
        this.r.report(
          D.PolicyUnknownMatcher,
          m.nameSpan,
          { criterion: this.label, matcher: m.name, allowed: listWords(allowed), suggestion: suggest(m.name, allowed) },
          m.path,
        );
        this.failed = true;
      }
    }
    if (this.failed) return undefined;

    let out: Expr | undefined;
    switch (family) {
      case 'date':
      case 'time_of_day':
        out = this.range(family, matchers);
        break;
      case 'day_of_week':
        out = this.days(matchers);
        break;
      default: {
        const leaves: Expr[] = [];
        for (const m of matchers) {
          const leaf = this.leaf(family, m);
          if (leaf) leaves.push(leaf);
        }
        out = leaves.length > 0 ? andOf(leaves) : undefined;
      }
    }
    return this.failed ? undefined : out;
  }

  /** The matcher a bare value stands for, or undefined when the criterion takes none. */
  private bareOp(family: Family, v: RawValue): string | undefined {
    const isList = v.kind === 'list';
    if (v.kind !== 'string' && !isList) return undefined;
    switch (family) {
      case 'string':
      case 'client_certificate':
      case 'source_ip':
      case 'day_of_week':
        return isList ? 'in' : 'is';
      case 'list':
        return isList ? 'in' : 'has';
      case 'device':
        return isList ? undefined : 'is';
      default:
        return undefined;
    }
  }

  private boolean(): Expr | undefined {
    const c = this.c;
    const name = c.name as BooleanCriterionName; // familyOf checked it
    if (c.matchers.length > 0) {
      const m = c.matchers[0]!;
      this.r.report(D.PolicyUnknownMatcher, m.nameSpan, { criterion: c.name, matcher: m.name, allowed: 'no matcher (it is `true` or absent)', suggestion: undefined }, m.path);
      return undefined;
    }
    if (c.bare === undefined) {
      if (c.surface === 'text') return this.failed ? undefined : { name, op: 'criterion' };
      this.r.report(D.PolicyWrongValueType, c.span, { what: `criterion \`${c.name}\``, expected: '`true`', got: 'no value' }, c.path);
      return undefined;
    }
    const v = c.bare;
    if (v.kind === 'list' || (v.kind === 'other' && v.scalar === undefined)) {
      this.r.report(D.PolicyWrongValueType, v.span, { what: `criterion \`${c.name}\``, expected: '`true`', got: describe(v) }, c.path);
      return undefined;
    }
    // The established proxy ignores the value of these criteria (`accept: 1`); svc does too, with a
    // warning, except for a value that reads as "no", where the writer meant the opposite.
    const written = v.kind === 'bool' ? String(v.value) : v.kind === 'string' ? v.value : v.scalar!;
    if (READS_AS_NO.has(written.trim().toLowerCase())) {
      this.r.report(D.PolicyBooleanFalse, v.span, { criterion: c.name }, c.path);
      return undefined;
    }
    if (asBool(v) !== true) this.r.report(D.PolicyBooleanValueIgnored, v.span, { criterion: c.name, written: v.kind === 'string' ? JSON.stringify(written) : written }, c.path);
    return this.failed ? undefined : { name, op: 'criterion' };
  }

  /** One leaf for a non-range matcher. */
  private leaf(family: Family, m: RawMatcher): Expr | undefined {
    const c = this.c;
    const what = `\`${this.label} ${m.name}\``;
    switch (family) {
      case 'string':
      case 'list': {
        const match = this.stringMatcher(m, what);
        if (!match) return undefined;
        if (c.name === 'groups') return { match, name: 'groups', op: 'criterion' };
        if (c.name === 'claim') return { claim: c.claim?.value ?? '', match, name: 'claim', op: 'criterion' };
        if (match.op === 'has') throw new Error('has on a string criterion'); // excluded by MATCHERS
        return { match, name: c.name as StringCriterionName, op: 'criterion' };
      }
      case 'device': {
        if (m.name === 'approved' || m.name === 'not_approved') {
          let approved = m.name === 'approved';
          if (m.value !== undefined || c.surface === 'document') {
            const b = m.value === undefined ? undefined : asBool(m.value);
            if (b === undefined) {
              this.report(D.PolicyWrongValueType, m.value?.span ?? m.nameSpan, { what, expected: c.surface === 'text' ? 'written without a value' : '`true` or `false`', got: describe(m.value) }, m.path);
              return undefined;
            }
            if (!b && !approved) {
              // `not_approved: false` is a double negation with no meaning the established proxy has.
              this.report(D.PolicyBooleanFalse, m.value!.span, { criterion: 'device not_approved' }, m.path);
              return undefined;
            }
            // `approved: false` is "a registered device that is not approved", as in the established proxy.
            if (!b) approved = false;
          }
          return { match: { op: approved ? 'approved' : 'not_approved' }, name: 'device', op: 'criterion' };
        }
        const v = this.string(m, what);
        if (v === undefined) return undefined;
        return { match: { op: m.name === 'type' ? 'type' : 'is', value: v }, name: 'device', op: 'criterion' };
      }
      case 'client_certificate': {
        const wantList = m.name === 'in' || (m.name === 'fingerprint' && m.value?.kind === 'list');
        const fp = (s: string, sp: Span, path: string): string | undefined => {
          const p = parseFingerprint(s);
          if (!p.ok) this.report(D.PolicyInvalidFingerprint, sp, { value: s }, path);
          return p.ok ? p.value : undefined;
        };
        if (wantList) {
          const vs = this.strings(m, what, fp);
          return vs && { match: { op: 'in', values: vs }, name: 'client_certificate', op: 'criterion' };
        }
        const v = this.string(m, what, fp);
        return v === undefined ? undefined : { match: { op: 'is', value: v }, name: 'client_certificate', op: 'criterion' };
      }
      case 'source_ip': {
        const cidr = (s: string, sp: Span, path: string): string | undefined => {
          const p = parseCidr(s);
          if (!p.ok) this.report(D.PolicyInvalidCidr, sp, { value: s, problem: p.problem }, path);
          return p.ok ? p.value : undefined;
        };
        if (m.name === 'is') {
          const v = this.string(m, what, cidr);
          return v === undefined ? undefined : { match: { op: 'is', value: v }, name: 'source_ip', op: 'criterion' };
        }
        const vs = this.strings(m, what, cidr);
        return vs && { match: { op: m.name as SetOp, values: vs }, name: 'source_ip', op: 'criterion' };
      }
      default:
        throw new Error(`leaf: unexpected family ${family}`);
    }
  }

  private stringMatcher(m: RawMatcher, what: string): ListMatcher | undefined {
    if (m.name === 'in' || m.name === 'not_in') {
      const vs = this.strings(m, what);
      return vs && { op: m.name, values: vs };
    }
    const v = this.string(m, what);
    if (v === undefined) return undefined;
    return m.name === 'has' ? { op: 'has', value: v } : { op: m.name as StringOp, value: v };
  }

  private range(family: 'date' | 'time_of_day', matchers: readonly RawMatcher[]): Expr | undefined {
    const seen = new Map<string, string>();
    for (const m of matchers) {
      const what = `\`${family} ${m.name}\``;
      if (seen.has(m.name)) {
        this.report(D.PolicyDuplicateMatcher, m.nameSpan, { criterion: family, matcher: m.name }, m.path);
        continue;
      }
      const v = this.string(m, what, (s, sp, path) => {
        if (m.name === 'timezone') return this.timezone(s, sp, path);
        const p = family === 'date' ? parseInstant(s) : parseTimeOfDay(s);
        if (!p.ok) this.report(family === 'date' ? D.PolicyInvalidDate : D.PolicyInvalidTime, sp, { value: s }, path);
        return p.ok ? p.value : undefined;
      });
      if (v !== undefined) seen.set(m.name, v);
      else this.failed = true;
    }
    const after = seen.get('after');
    const before = seen.get('before');
    if (this.failed) return undefined;
    if (after === undefined && before === undefined) {
      this.report(D.PolicyMissingMatcher, this.c.span, { criterion: family, allowed: listWords(MATCHERS[family]) }, this.c.path);
      return undefined;
    }
    if (after !== undefined && before !== undefined) {
      const empty = family === 'date' ? Date.parse(after) >= Date.parse(before) : minutesOf(after) === minutesOf(before);
      if (empty) {
        this.report(D.PolicyEmptyRange, this.c.span, { criterion: family, after, before }, this.c.path);
        return undefined;
      }
    }
    const tz = seen.get('timezone');
    if (family === 'date') {
      return { match: { ...(after !== undefined ? { after } : {}), ...(before !== undefined ? { before } : {}), op: 'range' }, name: 'date', op: 'criterion' };
    }
    return {
      match: { ...(after !== undefined ? { after } : {}), ...(before !== undefined ? { before } : {}), op: 'range', ...(tz !== undefined ? { timezone: tz } : {}) },
      name: 'time_of_day',
      op: 'criterion',
    };
  }

  private days(matchers: readonly RawMatcher[]): Expr | undefined {
    const tzs = matchers.filter((m) => m.name === 'timezone');
    let timezone: string | undefined;
    tzs.forEach((m, i) => {
      if (i > 0) {
        this.report(D.PolicyDuplicateMatcher, m.nameSpan, { criterion: 'day_of_week', matcher: 'timezone' }, m.path);
        return;
      }
      timezone = this.string(m, '`day_of_week timezone`', (s, sp, path) => this.timezone(s, sp, path));
      if (timezone === undefined) this.failed = true;
    });
    const day = (s: string, sp: Span, path: string): Day | undefined => {
      const p = parseDay(s);
      if (!p.ok) this.report(D.PolicyInvalidDay, sp, { value: s, suggestion: suggest(s, DAY_SUGGESTIONS) }, path);
      return p.ok ? p.value : undefined;
    };
    const tzField = (): { timezone?: string } => (timezone !== undefined ? { timezone } : {});
    const leaves: Expr[] = [];
    for (const m of matchers) {
      if (m.name === 'timezone') continue;
      const what = `\`day_of_week ${m.name}\``;
      if (m.name === 'is') {
        const v = this.string(m, what, day);
        if (v !== undefined) leaves.push({ match: { op: 'is', ...tzField(), value: v }, name: 'day_of_week', op: 'criterion' });
      } else {
        const vs = this.strings(m, what, day);
        if (vs) leaves.push({ match: { op: m.name as SetOp, ...tzField(), values: vs }, name: 'day_of_week', op: 'criterion' });
      }
    }
    if (this.failed) return undefined;
    if (leaves.length === 0) {
      this.report(D.PolicyMissingMatcher, this.c.span, { criterion: 'day_of_week', allowed: listWords(['is', 'in', 'not_in']) }, this.c.path);
      return undefined;
    }
    return andOf(leaves);
  }

  private timezone(s: string, sp: Span, path: string): string | undefined {
    const p = parseTimezone(s);
    if (!p.ok) this.report(D.PolicyInvalidTimezone, sp, { value: s }, path);
    return p.ok ? p.value : undefined;
  }

  /** One non-empty string without control characters, checked further by `check`. */
  private string<T extends string>(m: RawMatcher, what: string, check?: (s: string, sp: Span, path: string) => T | undefined): T | undefined {
    const v = m.value;
    if (v === undefined || v.kind !== 'string') {
      this.report(D.PolicyWrongValueType, v?.span ?? m.nameSpan, { what, expected: 'a string', got: describe(v) }, v?.path ?? m.path);
      return undefined;
    }
    return this.scalar(v, what, check);
  }

  /** A non-empty list of such strings. */
  private strings<T extends string>(m: RawMatcher, what: string, check?: (s: string, sp: Span, path: string) => T | undefined): T[] | undefined {
    const v = m.value;
    if (v === undefined || v.kind !== 'list') {
      this.report(D.PolicyWrongValueType, v?.span ?? m.nameSpan, { what, expected: 'a list of strings', got: describe(v) }, v?.path ?? m.path);
      return undefined;
    }
    if (v.items.length === 0) {
      this.report(D.PolicyEmptyList, v.span, { what: `the list of ${what}` }, v.path);
      return undefined;
    }
    const out: T[] = [];
    let bad = false;
    for (const item of v.items) {
      if (item.kind !== 'string') {
        this.report(D.PolicyWrongValueType, item.span, { what: `an item of ${what}`, expected: 'a string', got: describe(item) }, item.path);
        bad = true;
        continue;
      }
      const s = this.scalar(item, what, check);
      if (s === undefined) bad = true;
      else out.push(s);
    }
    return bad ? undefined : out;
  }

  private scalar<T extends string>(v: RawValue & { kind: 'string' }, what: string, check?: (s: string, sp: Span, path: string) => T | undefined): T | undefined {
    if (v.value === '') {
      this.report(D.PolicyEmptyStringValue, v.span, { what: `the value of ${what}` }, v.path);
      return undefined;
    }
    if (hasControlCharacter(v.value)) {
      this.report(D.PolicyControlCharacter, v.span, { what: `the value of ${what}`, value: v.value }, v.path);
      return undefined;
    }
    if (!check) return v.value as T;
    const out = check(v.value, v.span, v.path);
    if (out === undefined) this.failed = true;
    return out;
  }

  /** Reports and marks the criterion as failed. */
  private report<A>(def: DiagnosticDef<A>, sp: Span, args: A, path: string): void {
    this.failed = true;
    this.r.report(def, sp, args, path);
  }

  /** Checks a claim name like a value (no control characters). */
  private text(s: string, what: string, sp: Span, path: string): void {
    if (hasControlCharacter(s)) this.report(D.PolicyControlCharacter, sp, { what, value: s }, path);
  }
}

/** Written values of a value-less criterion that mean "no" (compared trimmed, in lower case). */
const READS_AS_NO: ReadonlySet<string> = new Set(['false', '0', 'no', 'off']);

/** A boolean from a bool value, or from untyped text (`true`/`false` from env or properties). */
function asBool(v: RawValue): boolean | undefined {
  if (v.kind === 'bool') return v.value;
  if (v.kind === 'string' && v.untyped && (v.value === 'true' || v.value === 'false')) return v.value === 'true';
  return undefined;
}
