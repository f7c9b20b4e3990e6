/**
 * Small readers shared by the validation rules (this file is not a rule). Rules look at the
 * configuration as written (`RuleInput.config`, `RouteInput.raw`), which passed the schema check
 * only where it has no schema diagnostic; so every reader here checks the type it expects and
 * treats anything else as "not given", leaving wrong types to the schema stage.
 */
import { hasControlChar } from '../../ir/values.ts';
import type { Span } from '../../source/source-file.ts';
import { keySpanOf, spanOf, type RouteInput, type RuleInput } from '../rule.ts';

type Raw = Readonly<Record<string, unknown>>;

/**
 * The string value of `field`, or undefined when absent, not a string, or holding a control
 * character (reported once, by lowering or the control-character rule; docs/security.md S28).
 */
export function strField(raw: Raw, field: string): string | undefined {
  const v = raw[field];
  return typeof v === 'string' && !hasControlChar(v) ? v : undefined;
}

/** A `to` entry of a route as written: its text, and its position in the `to` list (none for a `to` string). */
export interface ToEntry {
  readonly text: string;
  readonly item: number | undefined;
}

/** The `to` entries of a route as written; control-character entries are left out. */
export function toEntriesOf(route: RouteInput): ToEntry[] {
  const to = route.raw['to'];
  const out: ToEntry[] = [];
  if (typeof to === 'string') {
    if (!hasControlChar(to)) out.push({ text: to, item: undefined });
  } else if (Array.isArray(to)) {
    to.forEach((t: unknown, j) => {
      if (typeof t === 'string' && !hasControlChar(t)) out.push({ text: t, item: j });
    });
  }
  return out;
}

/** The config path of a `to` entry: `routes[2].to`, `routes[2].to[1]` (joined only for a report). */
export function toEntryPath(route: RouteInput, e: ToEntry): string {
  return e.item === undefined ? `${route.path}.to` : `${route.path}.to[${e.item}]`;
}

/** The object value of `field` (a map), or undefined when absent or not a map. */
export function mapField(raw: Raw, field: string): Raw | undefined {
  const v = raw[field];
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Raw) : undefined;
}

/**
 * Tells whether a setting or field is given: present and not an empty string, an empty list or
 * `null`. `false` counts as given (it is a value); callers that mean "turned on" test `=== true`.
 */
export function isGiven(raw: Raw, field: string): boolean {
  const v = raw[field];
  if (v === undefined || v === null || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  return true;
}

/**
 * Tells whether an allow field (`policy`, `allowed_users`, …) says who may pass: given as `isGiven`
 * has it, and for the `allowed_idp_claims` map, with at least one claim.
 */
export function isAllowListGiven(raw: Raw, field: string): boolean {
  if (field !== 'allowed_idp_claims') return isGiven(raw, field);
  const v = raw[field];
  return v !== null && typeof v === 'object' && Object.keys(v).length > 0;
}

/** The config path of a route field: `routes[2].from`. */
export function fieldPath(route: RouteInput, field: string): string {
  return `${route.path}.${field}`;
}

/** The value span of a route field (falling back to the route). */
export function fieldSpan(input: RuleInput, route: RouteInput, field: string): Span | undefined {
  return spanOf(input, fieldPath(route, field));
}

/** The key span of a route field (where `field:` is written), falling back to its value. */
export function fieldKeySpan(input: RuleInput, route: RouteInput, field: string): Span | undefined {
  return keySpanOf(input, fieldPath(route, field));
}

/** The fields of `fields` that a route gives, in the order they are written in the config. */
export function writtenOrder(input: RuleInput, route: RouteInput, fields: readonly string[]): string[] {
  return fields
    .filter((f) => route.raw[f] !== undefined)
    .sort((a, b) => writtenAt(input, route, a) - writtenAt(input, route, b) || fields.indexOf(a) - fields.indexOf(b));
}

/** Where a route field's key is written (last when unknown). */
function writtenAt(input: RuleInput, route: RouteInput, field: string): number {
  return fieldKeySpan(input, route, field)?.start ?? Number.MAX_SAFE_INTEGER;
}

/** Joins field names for a message: `` `a` and `b` ``, `` `a`, `b` and `c` ``. */
export function fieldList(fields: readonly string[]): string {
  const quoted = fields.map((f) => `\`${f}\``);
  if (quoted.length <= 1) return quoted.join('');
  return `${quoted.slice(0, -1).join(', ')} and ${quoted[quoted.length - 1]!}`;
}

/** What the rules read of a parsed URL. */
export interface ParsedUrl {
  /** The scheme without its colon, lower-cased. */
  readonly scheme: string;
  readonly hostname: string;
  readonly port: string;
  readonly pathname: string;
}

/**
 * Parses a URL that must name a host, as lowering parses a route's `from` and `to`; undefined when
 * it does not parse or names no host (lowering reported it).
 */
export function parseHostUrl(text: string): ParsedUrl | undefined {
  try {
    const u = new URL(text);
    return u.hostname === '' ? undefined : Object.freeze({ scheme: u.protocol.slice(0, -1).toLowerCase(), hostname: u.hostname, port: u.port, pathname: u.pathname });
  } catch {
    return undefined;
  }
}

/** A route's `from` and its parse. */
export interface FromUrl {
  readonly from: string;
  readonly url: ParsedUrl;
}

/** The `from` of each route, read and parsed once for all the rules that read it (a route's raw fields do not change). */
const fromUrls = new WeakMap<RouteInput, FromUrl | null>();

/**
 * The route's `from` as `parseHostUrl` parses it, with the text it was parsed from; undefined when
 * `from` is absent, not a string, holds a control character, or does not parse.
 */
export function fromUrlOf(route: RouteInput): FromUrl | undefined {
  let known = fromUrls.get(route);
  if (known === undefined) {
    const from = strField(route.raw, 'from');
    const url = from === undefined ? undefined : parseHostUrl(from);
    known = from !== undefined && url !== undefined ? Object.freeze({ from, url }) : null;
    fromUrls.set(route, known);
  }
  return known ?? undefined;
}

/** True when the route's `from` is a `tcp+https` URL (as written, whether or not it lowered). */
export function isTcpRoute(route: RouteInput): boolean {
  return fromUrlOf(route)?.url.scheme === 'tcp+https';
}
