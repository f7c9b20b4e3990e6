/**
 * What every directory client shares (docs/authentication.md "Groups from the directory"): JSON
 * requests over undici's `fetch`, pagination, and rate limits. A sync is bounded by
 * `idp_refresh_directory_timeout` (its `signal` aborts then, and `deadlineMs` says when): a rate
 * limit (429, or 403 with `Retry-After` / `x-ratelimit-reset`) is waited out and the same request
 * made again when the wait ends before the deadline, and fails the sync otherwise; requests are
 * never retried at once, so a limited API is never hammered.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fetch, type Dispatcher } from 'undici';
import { SvcError } from '../../core/errors.ts';

/** A directory request that failed: the sync keeps the last good directory. */
export class DirectoryError extends SvcError<'SVC_ERR_DIRECTORY'> {
  /** The HTTP status, when the API answered. */
  readonly status: number | undefined;
  constructor(message: string, options?: { cause?: unknown; status?: number }) {
    super('SVC_ERR_DIRECTORY', message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DirectoryError';
    this.status = options?.status;
  }
}

/** What a client's requests run with. */
export interface DirectoryCall {
  /** Aborts at `idp_refresh_directory_timeout` (and when the identity manager stops). */
  readonly signal: AbortSignal;
  /** When the sync must end, ms since the epoch: a rate-limit wait past it fails the sync at once. */
  readonly deadlineMs: number;
  /** Tests: a dispatcher trusting their certificate authority. */
  readonly dispatcher?: Dispatcher;
  readonly now?: () => number;
  readonly log?: (entry: Record<string, unknown>) => void;
}

/** The first wait for a rate limit that states none (doubled at each further one). */
const DEFAULT_WAIT_MS = 1_000;
/** Google's quota reasons in a 403 body (Admin SDK error format). */
const QUOTA_REASON = /"reason"\s*:\s*"(?:userRateLimitExceeded|rateLimitExceeded|quotaExceeded)"/;
/** Most rate-limit waits for one request: then the sync fails and the next one starts over. */
const MAX_WAITS = 8;

/** A JSON answer, with the headers pagination reads. */
export interface JsonAnswer {
  readonly body: unknown;
  readonly headers: Headers;
  readonly url: string;
}

/**
 * Sends one request and reads its JSON answer; waits out rate limits within the deadline.
 * Throws {@link DirectoryError} for any other answer than 2xx, naming the API's error message.
 */
export async function requestJson(call: DirectoryCall, url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<JsonAnswer> {
  const now = call.now ?? Date.now;
  let waitMs = DEFAULT_WAIT_MS;
  for (let attempt = 0; ; attempt++) {
    let res: Response;
    try {
      res = (await fetch(url, {
        method: init.method ?? 'GET',
        headers: { accept: 'application/json', ...init.headers },
        ...(init.body !== undefined ? { body: init.body } : {}),
        signal: call.signal,
        redirect: 'error',
        ...(call.dispatcher ? { dispatcher: call.dispatcher } : {}),
      })) as unknown as Response;
    } catch (e) {
      throw new DirectoryError(call.signal.aborted ? `${pathOf(url)}: stopped at idp_refresh_directory_timeout` : `${pathOf(url)}: ${(e as Error).message}`, { cause: e });
    }
    let limited = rateLimitWaitMs(res, now());
    let text: string | undefined;
    if (limited === undefined && res.status === 403) {
      // Google answers some quota errors with 403 and a reason in the body, without headers.
      text = await res.text().catch(() => '');
      if (QUOTA_REASON.test(text)) limited = null;
    }
    if (limited !== undefined) {
      if (text === undefined) await res.body?.cancel().catch(() => undefined);
      const wait = limited ?? waitMs;
      waitMs = Math.min(waitMs * 2, 60_000);
      if (attempt >= MAX_WAITS || now() + wait >= call.deadlineMs) {
        throw new DirectoryError(`${pathOf(url)}: rate limited (HTTP ${res.status}) beyond idp_refresh_directory_timeout`, { status: res.status });
      }
      call.log?.({ msg: 'directory: rate limited; waiting before asking again', path: pathOf(url), status: res.status, waitMs: wait });
      try {
        await sleep(wait, undefined, { signal: call.signal });
      } catch (e) {
        throw new DirectoryError(`${pathOf(url)}: stopped at idp_refresh_directory_timeout while rate limited`, { cause: e, status: res.status });
      }
      continue;
    }
    text ??= await res.text().catch((e: unknown) => {
      throw new DirectoryError(`${pathOf(url)}: ${(e as Error).message}`, { cause: e });
    });
    if (res.status < 200 || res.status > 299) throw new DirectoryError(`${pathOf(url)}: HTTP ${res.status}${apiMessage(text)}`, { status: res.status });
    let body: unknown;
    try {
      body = text === '' ? null : JSON.parse(text);
    } catch (e) {
      throw new DirectoryError(`${pathOf(url)}: the answer is not JSON`, { cause: e, status: res.status });
    }
    return { body, headers: res.headers, url };
  }
}

/**
 * Whether `res` is a rate limit, and how long it asks to wait: undefined when it is not one; null
 * when it is one without a usable wait (the caller backs off on its own). A 429 is always one; a
 * 403 is one when it carries `Retry-After`, or `x-ratelimit-remaining: 0` with a reset time (GitHub,
 * GitLab); Google's 403 quota reasons are read from the body by {@link requestJson}.
 */
export function rateLimitWaitMs(res: { readonly status: number; readonly headers: Headers }, nowMs: number): number | null | undefined {
  if (res.status !== 429 && res.status !== 403) return undefined;
  const retryAfter = res.headers.get('retry-after');
  const reset = res.headers.get('x-ratelimit-reset') ?? res.headers.get('x-rate-limit-reset');
  const remaining = res.headers.get('x-ratelimit-remaining') ?? res.headers.get('x-rate-limit-remaining');
  const fromRetryAfter = retryAfter !== null ? parseRetryAfter(retryAfter, nowMs) : undefined;
  const fromReset = reset !== null && /^\d{1,12}$/.test(reset.trim()) ? Math.max(0, Number(reset.trim()) * 1000 - nowMs) : undefined;
  if (res.status === 403 && fromRetryAfter === undefined && !(fromReset !== undefined && remaining !== null && remaining.trim() === '0')) return undefined;
  return fromRetryAfter ?? fromReset ?? null;
}

/** `Retry-After`: delay-seconds or an HTTP date; undefined when it is neither. */
function parseRetryAfter(value: string, nowMs: number): number | undefined {
  const v = value.trim();
  if (/^\d{1,7}$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** The message of an API's JSON error body (`message`, `error.message`, `errorSummary`, `error_description`), shortened. */
function apiMessage(text: string): string {
  try {
    const j = JSON.parse(text) as Record<string, unknown>;
    const e = j['error'];
    const m =
      (typeof e === 'object' && e !== null && typeof (e as Record<string, unknown>)['message'] === 'string' ? (e as Record<string, unknown>)['message'] : undefined) ??
      j['errorSummary'] ??
      j['error_description'] ??
      j['message'] ??
      (typeof e === 'string' ? e : undefined);
    return typeof m === 'string' ? `: ${m.slice(0, 200)}` : '';
  } catch {
    return '';
  }
}

/** A URL's path for logs and errors (never its query: it may hold cursors, never secrets, but is long). */
function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

/** The `rel="next"` target of a `Link` header (RFC 8288), resolved against `base`; undefined when there is none. */
export function nextLink(link: string | null, base: string): string | undefined {
  if (link === null) return undefined;
  for (const part of link.split(/,(?=\s*<)/)) {
    const m = /^\s*<([^>]*)>(.*)$/.exec(part);
    if (m && /;\s*rel\s*=\s*"?(?:[^";]*\s)?next(?:\s[^";]*)?"?\s*(?:;|$)/i.test(m[2]!)) return new URL(m[1]!, base).href;
  }
  return undefined;
}

/** Most pages read of one list: a loop in an API's cursors ends here, not in a hang. */
const MAX_PAGES = 10_000;

/**
 * Reads every page of a list: `items` takes one answer's items, `next` the next page's URL (or
 * undefined after the last). The same URL twice ends the list with an error (a cursor loop).
 */
export async function readPages<T>(call: DirectoryCall, first: string, headers: Record<string, string>, items: (a: JsonAnswer) => T[], next: (a: JsonAnswer) => string | undefined): Promise<T[]> {
  const out: T[] = [];
  const seen = new Set<string>();
  for (let url: string | undefined = first; url !== undefined; ) {
    if (seen.has(url) || seen.size >= MAX_PAGES) throw new DirectoryError(`${pathOf(url)}: the API's pagination does not end`);
    seen.add(url);
    const answer = await requestJson(call, url, { headers });
    out.push(...items(answer));
    url = next(answer);
  }
  return out;
}

/** Runs `task` over `items`, at most `limit` at once; the first failure rejects (the others finish first). */
export async function mapBounded<T, R>(items: readonly T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let failure: { e: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      const i = next++;
      try {
        out[i] = await task(items[i]!);
      } catch (e) {
        failure ??= { e };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure.e;
  return out;
}

/** Reads an array of objects from an answer, failing on another shape. */
export function arrayOf(a: JsonAnswer, field?: string): Record<string, unknown>[] {
  const v = field === undefined ? a.body : a.body !== null && typeof a.body === 'object' ? (a.body as Record<string, unknown>)[field] : undefined;
  if (v === undefined && field !== undefined) return [];
  if (!Array.isArray(v)) throw new DirectoryError(`${pathOf(a.url)}: the answer is not a list${field ? ` in \`${field}\`` : ''}`);
  return v.filter((x): x is Record<string, unknown> => x !== null && typeof x === 'object' && !Array.isArray(x));
}

/** A string or number field as a string (ids are numbers at GitLab), else undefined. */
export function idOf(o: Record<string, unknown>, field = 'id'): string | undefined {
  const v = o[field];
  return typeof v === 'string' && v !== '' ? v : typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : undefined;
}
