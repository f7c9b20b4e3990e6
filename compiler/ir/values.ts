/**
 * Value syntax (docs/configuration.md): durations, URLs, `host:port` addresses. Each parser returns the lowered
 * value, or undefined after reporting why it could not.
 */
import * as D from '../diagnostics/codes/settings.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import type { Span } from '../source/source-file.ts';
import type { HostPort } from '../plan/types.ts';

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION = /^(?:(\d+(?:\.\d+)?|\.\d+)(ns|us|µs|ms|s|m|h))+$/;

/**
 * The syntax of the value kinds as JSON-schema patterns (ECMA-262, `u` flag), for
 * compiler/schema/config-schema.ts: the published schema says what lowering accepts, from the same
 * regular expressions. A value outside a pattern is always rejected by lowering too; lowering is
 * stricter only where a pattern cannot say it (a duration above 2^53 ms, a URL the WHATWG parser
 * refuses in ways other than a missing scheme or host).
 */
export const VALUE_PATTERNS = {
  /** A duration string (the integer `0` is the other accepted form). */
  duration: `^\\s*(?:0|${DURATION.source.slice(1, -1)})\\s*$`,
  /** `host:port`, `:port`, `[v6]:port` with a port from 1 to 65535; empty means unset. */
  hostPort: '^$|^\\s*(?:\\[[0-9a-fA-F:.]+\\]|[A-Za-z0-9.\\-_]*):(?=\\d{1,5}\\s*$)0*(?:[1-9]\\d{0,3}|[1-5]\\d{4}|6[0-4]\\d{3}|65[0-4]\\d{2}|655[0-2]\\d|6553[0-5])\\s*$',
  /** Base64 of exactly 32 bytes (43 characters, padding optional), as `decodeBase64` reads it. */
  secret32: '^\\s*[A-Za-z0-9+/]{43}=?\\s*$',
} as const;

/** A URL with a host, of one of `schemes` (any when absent), scheme letters in any case. */
export function urlPattern(schemes?: readonly string[]): string {
  const ci = (w: string) => [...w].map((c) => (/[a-z]/.test(c) ? `[${c}${c.toUpperCase()}]` : c === '+' || c === '.' ? `\\${c}` : c)).join('');
  const scheme = schemes ? `(?:${schemes.map(ci).join('|')})` : '[A-Za-z][A-Za-z0-9+.\\-]*';
  return `^\\s*${scheme}://[^\\s/?#@]*@?[^\\s/?#@:\\u0000-\\u001f\\u007f-\\u009f]+[^\\u0000-\\u001f\\u007f-\\u009f]*$`;
}
const DURATION_PART = /(\d+(?:\.\d+)?|\.\d+)(ns|us|µs|ms|s|m|h)/g;

/** Parses a Go-style duration (`30s`, `1h45m`, `1.5h`, `0`) into whole milliseconds. */
export function parseDurationMs(text: string): number | undefined {
  const t = text.trim();
  if (t === '0') return 0;
  if (!DURATION.test(t)) return undefined;
  let ms = 0;
  for (const m of t.matchAll(DURATION_PART)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return Number.isFinite(ms) && ms <= Number.MAX_SAFE_INTEGER ? Math.round(ms) : undefined;
}

export function lowerDuration(v: unknown, key: string, at: Span | undefined, r: Reporter): number | undefined {
  if (v === 0) return 0;
  const ms = typeof v === 'string' ? parseDurationMs(v) : undefined;
  if (ms === undefined) r.report(D.InvalidDuration, at, { key, value: String(v) }, key);
  return ms;
}

/** True when a string holds a C0/C1 control character or DEL (docs/security.md S28). */
export function hasControlChar(s: string): boolean {
  return /[\u0000-\u001f\u007f-\u009f]/.test(s);
}

/** Parses a URL that must carry a scheme and a host. Returns the WHATWG-serialized form. */
export function lowerUrl(v: string, key: string, at: Span | undefined, r: Reporter, schemes?: readonly string[]): URL | undefined {
  if (hasControlChar(v)) {
    r.report(D.ControlCharacter, at, { key }, key);
    return undefined;
  }
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    r.report(D.InvalidUrl, at, { key, value: v, problem: /^[a-z][a-z0-9+.-]*:/i.test(v) ? 'does not parse' : 'has no scheme' }, key);
    return undefined;
  }
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(v.trim()) || u.hostname === '') {
    r.report(D.InvalidUrl, at, { key, value: v, problem: 'has no host name' }, key);
    return undefined;
  }
  if (schemes && !schemes.includes(u.protocol.slice(0, -1))) {
    r.report(D.InvalidUrl, at, { key, value: v, problem: `must use ${schemes.map((s) => `\`${s}\``).join(' or ')}` }, key);
    return undefined;
  }
  return u;
}

/** Parses `host:port`, `:port` or `[v6]:port`. */
export function parseHostPort(text: string): HostPort | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.\-_]*)):(\d{1,5})$/.exec(text.trim());
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return undefined;
  return { host: (m[1] ?? m[2] ?? '').toLowerCase(), port };
}

export function lowerHostPort(v: string, key: string, at: Span | undefined, r: Reporter): HostPort | undefined {
  const hp = parseHostPort(v);
  if (!hp) r.report(D.InvalidHostPort, at, { key, value: v }, key);
  return hp;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** True for an RFC 9110 header-name token. */
export function isHeaderName(name: string): boolean {
  return TOKEN.test(name);
}

/** Strict standard base64 (padding optional); undefined when the text is not base64. */
export function decodeBase64(text: string): Buffer | undefined {
  const t = text.trim();
  if (t === '' || !/^[A-Za-z0-9+/]+={0,2}$/.test(t) || (t.includes('=') && t.length % 4 !== 0)) return undefined;
  return Buffer.from(t, 'base64');
}
