/**
 * Redis connection strings (docs/scale-out.md "Connection strings"): `redis://[user:pass@]host:port/[db]`,
 * `redis+sentinel://[:pass@]host:port[,host:port...]/[master[/db]][?params]`,
 * `redis+cluster://[user:pass@]host:port[,host:port...]/[?params]`, and the `rediss` TLS forms.
 * Hand-written because WHATWG URL parsing rejects comma-separated host lists.
 *
 * Part of the plan contract: the compiler checks the connection string with it, and the runtime
 * (runtime/databroker/redis-options.ts) reads the same string with it, since the plan keeps the
 * password only inside the secret.
 */
import type { HostPort } from './types.ts';

export interface ParsedRedisUrl {
  readonly kind: 'redis' | 'sentinel' | 'cluster';
  readonly tls: boolean;
  readonly hosts: HostPort[];
  readonly username: string | null;
  readonly password: string | null;
  readonly db: number;
  readonly master: string | null;
  readonly params: Record<string, string>;
}

const SCHEMES: Record<string, { kind: ParsedRedisUrl['kind']; tls: boolean }> = {
  redis: { kind: 'redis', tls: false },
  rediss: { kind: 'redis', tls: true },
  'redis+sentinel': { kind: 'sentinel', tls: false },
  'rediss+sentinel': { kind: 'sentinel', tls: true },
  'redis+cluster': { kind: 'cluster', tls: false },
  'rediss+cluster': { kind: 'cluster', tls: true },
};

function parseHost(text: string): HostPort | string {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.\-_]+))(?::(\d{1,5}))?$/.exec(text);
  if (!m) return `\`${text}\` is not a host or host:port`;
  const port = m[3] === undefined ? 6379 : Number(m[3]);
  if (port < 1 || port > 65535) return `port \`${m[3]}\` is out of range`;
  return { host: (m[1] ?? m[2] ?? '').toLowerCase(), port };
}

function decode(s: string): string | undefined {
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
}

/**
 * The query parameters a redis URL may carry: `dial_timeout` bounds connecting (and each reconnect
 * attempt), `read_timeout` bounds each command. Both are durations (`500ms`, `5s`, `1m`).
 */
export const REDIS_URL_PARAMS: readonly string[] = ['dial_timeout', 'read_timeout'];

/** A redis URL duration parameter in ms (1 ms to 10 minutes), or undefined when it is not one. */
export function durationMs(text: string): number | undefined {
  const m = /^(\d{1,6})(ms|s|m)$/.exec(text);
  if (!m) return undefined;
  const ms = Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 's' ? 1000 : 60_000);
  return ms >= 1 && ms <= 600_000 ? ms : undefined;
}

/** Parses a redis connection string; returns a problem description when it is not valid. */
export function parseRedisUrl(url: string): ParsedRedisUrl | string {
  const m = /^([a-z+]+):\/\/(?:([^@/]*)@)?([^/?#]*)(\/[^?#]*)?(?:\?([^#]*))?$/i.exec(url.trim());
  if (!m) return 'expected `scheme://[credentials@]host:port[/...]`';
  const name = m[1]!.toLowerCase();
  const scheme = Object.hasOwn(SCHEMES, name) ? SCHEMES[name] : undefined;
  if (!scheme) return `unknown scheme \`${m[1]}\``;
  let username: string | null = null;
  let password: string | null = null;
  if (m[2] !== undefined) {
    const colon = m[2].indexOf(':');
    const user = colon < 0 ? m[2] : m[2].slice(0, colon);
    const pass = colon < 0 ? undefined : m[2].slice(colon + 1);
    const u = decode(user);
    const p = pass === undefined ? undefined : decode(pass);
    if (u === undefined || (pass !== undefined && p === undefined)) return 'bad percent-encoding in the credentials';
    username = u === '' ? null : u;
    password = p === undefined || p === '' ? null : p;
  }
  if (m[3] === '') return 'no host';
  const hosts: HostPort[] = [];
  for (const h of m[3]!.split(',')) {
    const parsed = parseHost(h.trim());
    if (typeof parsed === 'string') return parsed;
    hosts.push(parsed);
  }
  if (scheme.kind === 'redis' && hosts.length > 1) return 'several hosts need `redis+sentinel://` or `redis+cluster://`';
  const segs = (m[4] ?? '/').split('/').slice(1).filter((s, i, all) => !(s === '' && i === all.length - 1));
  let db = 0;
  let master: string | null = null;
  const dbOf = (s: string): number | string => (/^\d+$/.test(s) && Number(s) <= 15 ? Number(s) : `database \`${s}\` is not a number from 0 to 15`);
  if (scheme.kind === 'sentinel') {
    if (segs.length === 0 || segs[0] === '') return 'sentinel URLs name the master: `redis+sentinel://host:26379/mymaster`';
    master = decode(segs[0]!) ?? segs[0]!;
    if (segs.length > 2) return 'too many path segments: expected `/master[/db]`';
    if (segs[1] !== undefined) {
      const d = dbOf(segs[1]);
      if (typeof d === 'string') return d;
      db = d;
    }
  } else if (scheme.kind === 'cluster') {
    if (segs.length > 0) return 'cluster URLs have no database path';
  } else if (segs.length > 0) {
    if (segs.length > 1) return 'too many path segments: expected `/db`';
    const d = dbOf(segs[0]!);
    if (typeof d === 'string') return d;
    db = d;
  }
  const params: Record<string, string> = {};
  if (m[5]) {
    for (const [k, v] of new URLSearchParams(m[5])) {
      // Every parameter is honoured by the runtime (runtime/databroker/redis-options.ts) or refused
      // here: a parameter compiled and silently ignored would be the worst kind of setting.
      if (!REDIS_URL_PARAMS.includes(k)) return `unknown parameter \`${k}\` (supported: ${REDIS_URL_PARAMS.map((p) => `\`${p}\``).join(', ')})`;
      if (durationMs(v) === undefined) return `parameter \`${k}\` must be a duration like \`500ms\`, \`5s\` or \`1m\` (at most 10 minutes), not \`${v}\``;
      params[k] = v;
    }
  }
  return { ...scheme, hosts, username, password, db, master, params };
}
