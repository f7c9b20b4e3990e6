/**
 * One access line of `svc run` read back for replay (runtime/observe/log/access-line.ts writes it;
 * docs/logging.md "The access line" documents it). svc's run log interleaves its other lines (start,
 * reloads, warnings), and a log may hold foreign or cut lines: `readAccessRecord` tells which a line
 * is, and takes an access line only when every field replay reads has the type the writer gives it.
 */

/** An access line, with the fields replay reads. */
export interface AccessRecord {
  readonly msg: 'request' | 'upgrade' | 'tunnel';
  readonly event: 'open' | 'close' | undefined;
  /** When the request was decided, ms since the epoch: the line's `time` (its end) less its `ms`. */
  readonly timeMs: number;
  readonly method: string | undefined;
  readonly host: string;
  readonly path: string;
  readonly route: string | number | undefined;
  readonly status: number;
  readonly upstream: string | undefined;
  readonly client: string | undefined;
  readonly user: string | undefined;
  readonly email: string | undefined;
  readonly groups: readonly string[] | undefined;
  readonly claims: Readonly<Record<string, readonly string[]>> | undefined;
  readonly device: { readonly id: string; readonly type: string; readonly approved: boolean } | undefined;
  readonly clientCert: { readonly sha256: string; readonly valid: boolean } | undefined;
  readonly preflight: boolean | undefined;
  readonly identityCut: boolean;
  readonly decision: string;
  readonly reasons: readonly string[];
}

/**
 * What a line is: an access line; an access line cut in the middle (not JSON, but begun as one:
 * a request svc served, that cannot be read back); another JSON line of svc's (or anyone's); or
 * junk (not a JSON object, or an access line whose fields do not have svc's types).
 */
export type ReadLine = { readonly kind: 'access'; readonly record: AccessRecord } | { readonly kind: 'cut' } | { readonly kind: 'other' } | { readonly kind: 'junk' };

/** How an access line begins its `msg`, as access-line.ts writes it (after level, time and service). */
const ACCESS_MSG = /^\{"level":"[a-z]+","time":[^,]*,"service":"(?:[^"\\]|\\.)*","msg":"(?:request|upgrade|tunnel)"/;

const isString = (v: unknown): v is string => typeof v === 'string';
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString);
const opt = <T>(v: unknown, check: (v: unknown) => v is T): T | undefined | null => (v === undefined ? undefined : check(v) ? v : null);

function isClaims(v: unknown): v is Record<string, string[]> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every(isStrings);
}
function isDevice(v: unknown): v is { id: string; type: string; approved: boolean } {
  const d = v as Record<string, unknown>;
  return typeof v === 'object' && v !== null && isString(d['id']) && isString(d['type']) && typeof d['approved'] === 'boolean';
}
function isCert(v: unknown): v is { sha256: string; valid: boolean } {
  const c = v as Record<string, unknown>;
  return typeof v === 'object' && v !== null && isString(c['sha256']) && typeof c['valid'] === 'boolean';
}

/** Reads one log line (see the file comment). Never throws. */
export function readAccessRecord(text: string): ReadLine {
  // Cheap first: an access line is a JSON object with `"msg":"request"` (or upgrade, tunnel).
  if (text.length === 0 || text.charCodeAt(0) !== 0x7b) return { kind: 'junk' };
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return ACCESS_MSG.test(text) ? { kind: 'cut' } : { kind: 'junk' };
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return { kind: 'junk' };
  const j = o as Record<string, unknown>;
  const msg = j['msg'];
  if (msg !== 'request' && msg !== 'upgrade' && msg !== 'tunnel') return { kind: 'other' };
  const timeMs = isString(j['time']) ? Date.parse(j['time']) : typeof j['time'] === 'number' ? j['time'] : Number.NaN;
  const event = j['event'];
  const route = j['route'];
  const fields = {
    method: opt(j['method'], isString),
    upstream: opt(j['upstream'], isString),
    client: opt(j['client'], isString),
    user: opt(j['user'], isString),
    email: opt(j['email'], isString),
    groups: opt(j['groups'], isStrings),
    claims: opt(j['claims'], isClaims),
    device: opt(j['device'], isDevice),
    clientCert: opt(j['clientCert'], isCert),
    preflight: opt(j['preflight'], (v): v is boolean => typeof v === 'boolean'),
    reasons: opt(j['reasons'], isStrings),
  };
  // An access line with a field of the wrong type was not written by svc: not replayed on a guess.
  if (Object.values(fields).some((v) => v === null)) return { kind: 'junk' };
  const ms = j['ms'] === undefined ? 0 : j['ms'];
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) return { kind: 'junk' };
  if (!Number.isFinite(timeMs) || !isString(j['host']) || !isString(j['path']) || typeof j['status'] !== 'number' || !isString(j['decision'])) return { kind: 'junk' };
  if (event !== undefined && event !== 'open' && event !== 'close') return { kind: 'junk' };
  if (route !== undefined && !isString(route) && typeof route !== 'number') return { kind: 'junk' };
  const f = fields as { [K in keyof typeof fields]: Exclude<(typeof fields)[K], null> };
  return {
    kind: 'access',
    record: {
      msg,
      event,
      // A tunnel's `open` line has `ms` 0; a request's line is written when its response ends.
      timeMs: timeMs - ms,
      method: f.method,
      host: j['host'],
      path: j['path'],
      route,
      status: j['status'],
      upstream: f.upstream,
      client: f.client,
      user: f.user,
      email: f.email,
      groups: f.groups,
      claims: f.claims,
      device: f.device,
      clientCert: f.clientCert,
      preflight: f.preflight,
      identityCut: j['identityCut'] === true,
      decision: j['decision'],
      reasons: f.reasons ?? [],
    },
  };
}
