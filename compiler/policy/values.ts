/**
 * Parsers for the typed values policy criteria take (CIDR blocks, instants, times of day, time
 * zones, day names, certificate fingerprints). Each returns the canonical form stored in the IR or
 * a short problem description; none reports or throws.
 */
import { SocketAddress, isIPv4, isIPv6 } from 'node:net';
import { DAYS, type Day } from './ir.ts';

/** The canonical value, or why the text is not one. */
export type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: string };

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const bad = (problem: string): Parsed<never> => ({ ok: false, problem });

/** True when `s` holds a control character (U+0000..U+001F, U+007F). */
export function hasControlCharacter(s: string): boolean {
  return /[\u0000-\u001f\u007f]/.test(s);
}

/**
 * Parses an IP address or CIDR block into canonical `address/prefix`: a bare address gets `/32`
 * (IPv4) or `/128` (IPv6); IPv6 is written in its canonical compressed lower-case form. Host bits
 * below the prefix are kept as written (the runtime masks them).
 */
export function parseCidr(text: string): Parsed<string> {
  const slash = text.indexOf('/');
  const addr = slash < 0 ? text : text.slice(0, slash);
  const prefixText = slash < 0 ? undefined : text.slice(slash + 1);
  let family: 'ipv4' | 'ipv6';
  if (isIPv4(addr)) family = 'ipv4';
  else if (isIPv6(addr) && !addr.includes('%')) family = 'ipv6';
  else return bad(addr.includes('%') ? 'zone ids are not allowed' : `${JSON.stringify(addr)} is not an IP address`);
  const max = family === 'ipv4' ? 32 : 128;
  let prefix = max;
  if (prefixText !== undefined) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) return bad(`prefix length ${JSON.stringify(prefixText)} is not a number`);
    prefix = Number(prefixText);
    if (prefix > max) return bad(`prefix length ${prefix} exceeds ${max}`);
  }
  const canonical = family === 'ipv6' ? new SocketAddress({ address: addr, family }).address : addr;
  return ok(`${canonical}/${prefix}`);
}

const INSTANT = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|([+-])(\d{2}):?(\d{2}))$/;

/**
 * Parses an ISO-8601 instant (date, time and `Z` or an offset) into canonical UTC
 * `toISOString()` form. Calendar fields are checked exactly (no `Feb 30` roll-over).
 */
export function parseInstant(text: string): Parsed<string> {
  const m = INSTANT.exec(text);
  if (!m) return bad('expected `YYYY-MM-DDTHH:MM[:SS][.fff]` followed by `Z` or an offset');
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? '0'].map(Number) as [number, number, number, number, number, number];
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const daysIn = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1] ?? 0;
  if (mo < 1 || mo > 12 || d < 1 || d > daysIn || h > 23 || mi > 59 || s > 59) return bad('a date or time field is out of range');
  if (m[9] !== undefined && (Number(m[10]) > 23 || Number(m[11]) > 59)) return bad('the offset is out of range');
  const ms = Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6] ?? '00'}${(m[7] ?? '').slice(0, 4)}${m[8] === 'z' || m[8] === 'Z' ? 'Z' : `${m[9]}${m[10]}:${m[11]}`}`);
  if (!Number.isFinite(ms)) return bad('not a valid instant');
  return ok(new Date(ms).toISOString());
}

/** Parses a 24-hour `HH:MM` time of day (`00:00`..`23:59`); the canonical form is the same text. */
export function parseTimeOfDay(text: string): Parsed<string> {
  const m = /^([01][0-9]|2[0-3]):([0-5][0-9])$/.exec(text);
  return m ? ok(text) : bad('expected `HH:MM`');
}

/** Minutes since midnight of a canonical `HH:MM`. */
export function minutesOf(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

/** Parses an IANA time zone name, returning the canonical name the platform's `Intl` resolves it to. */
export function parseTimezone(text: string): Parsed<string> {
  if (text === '' || hasControlCharacter(text)) return bad('empty');
  try {
    return ok(new Intl.DateTimeFormat('en-US', { timeZone: text }).resolvedOptions().timeZone);
  } catch {
    return bad('unknown time zone');
  }
}

const DAY_NAMES: Readonly<Record<string, Day>> = {
  mon: 'mon', monday: 'mon', tue: 'tue', tues: 'tue', tuesday: 'tue', wed: 'wed', wednesday: 'wed',
  thu: 'thu', thur: 'thu', thurs: 'thu', thursday: 'thu', fri: 'fri', friday: 'fri',
  sat: 'sat', saturday: 'sat', sun: 'sun', sunday: 'sun',
};

/** Parses a day name (`mon`..`sun` or the full English name, any case) into its three-letter form. */
export function parseDay(text: string): Parsed<Day> {
  const d = DAY_NAMES[text.toLowerCase()];
  return d !== undefined && Object.hasOwn(DAY_NAMES, text.toLowerCase()) ? ok(d) : bad('not a day name');
}

/** The day names a misspelt day is compared against for "did you mean". */
export const DAY_SUGGESTIONS: readonly string[] = DAYS;

/**
 * Parses a SHA-256 certificate fingerprint: 64 hex digits, optionally as colon-separated pairs.
 * The canonical form is lower-case without colons.
 */
export function parseFingerprint(text: string): Parsed<string> {
  const hex = /^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){31}$/.test(text) ? text.replace(/:/g, '') : text;
  return /^[0-9A-Fa-f]{64}$/.test(hex) ? ok(hex.toLowerCase()) : bad('expected 64 hex digits');
}
