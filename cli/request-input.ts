/**
 * The request and identity a review command (`svc explain`, `svc test`) asks about, built from what
 * an operator types: a URL, a method, headers, a peer address, a time, and an identity as JSON.
 *
 * The URL is split by hand rather than with `new URL`, on purpose: WHATWG URL parsing would already
 * normalize the target (`/a/../b`, `%2e`), and the point of these commands is to show what svc's own
 * canonicalization (runtime/request/canonical-request.ts) does with the target exactly as a client
 * could send it.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { DecisionRequest, Identity } from '../runtime/core/types.ts';

/** A value, or a message that says what is wrong with the input (lower-case, ready to print). */
export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string };

/** What a person specifies about a request; everything but `url` has a default. */
export interface RequestSpec {
  /**
   * `http(s)://authority/target`: the scheme, the `Host` header and the raw request target; or, with
   * method `CONNECT`, `tcp+https://host:port`: the CONNECT target of a `tcp+https` route.
   */
  readonly url: string;
  /** Default `GET`. */
  readonly method?: string;
  /** Extra request headers in the order given; names are lower-cased, repeated names accumulate. */
  readonly headers?: readonly (readonly [string, string])[];
  /** The TCP peer; default `127.0.0.1`. */
  readonly peer?: string;
  /** The request time in ms since the epoch; default now. */
  readonly nowMs?: number;
}

/** The default TCP peer: a client on the same machine. */
export const DEFAULT_PEER = '127.0.0.1';

const URL_PARTS = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/s;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Builds the request the listener would receive for `spec`. The target is the URL's text after its
 * authority, unchanged (`''` becomes `/`, a bare `?q` becomes `/?q`); the `Host` header is the
 * authority as typed. A `Host` given among `headers` is sent in addition, so the request carries two
 * and svc refuses it (400 `host-duplicate`), as it would refuse such a request on the wire.
 */
export function buildRequest(spec: RequestSpec): Checked<DecisionRequest> {
  const m = URL_PARTS.exec(spec.url);
  if (!m) return { ok: false, message: `url \`${spec.url}\` is not an absolute URL (\`https://host/path\`)` };
  const scheme = m[1]!.toLowerCase();
  const method = spec.method ?? 'GET';
  const connect = method.toUpperCase() === 'CONNECT';
  if (scheme === 'tcp+https' || connect) {
    // A CONNECT carries only its target, `host:port` (the listener's CONNECT handler decides it).
    if (scheme !== 'tcp+https' || !connect) return { ok: false, message: `url \`${spec.url}\`: a tcp+https route is explained with -X CONNECT and a tcp+https://host:port URL` };
    if (m[3]! !== '' && m[3]! !== '/') return { ok: false, message: `url \`${spec.url}\`: a tcp+https URL has no path` };
  } else if (scheme !== 'http' && scheme !== 'https') return { ok: false, message: `url \`${spec.url}\` has scheme \`${m[1]!}\`; only http, https and (with -X CONNECT) tcp+https requests can be explained` };
  const authority = m[2]!;
  const rest = m[3]!;
  const target = connect ? authority : rest === '' ? '/' : rest.startsWith('?') ? `/${rest}` : rest;
  if (!TOKEN.test(method)) return { ok: false, message: `method \`${method}\` is not an HTTP method token` };
  const headers: Record<string, string[]> = { host: [authority] };
  for (const [rawName, value] of spec.headers ?? []) {
    const name = rawName.trim().toLowerCase();
    if (!TOKEN.test(name)) return { ok: false, message: `header name \`${rawName}\` is not an HTTP token` };
    (headers[name] ??= []).push(value);
  }
  return {
    ok: true,
    value: { method: connect ? 'CONNECT' : method, target, scheme: connect ? 'https' : (scheme as 'http' | 'https'), headers, peer: spec.peer ?? DEFAULT_PEER, nowMs: spec.nowMs ?? Date.now() },
  };
}

/** Parses a `--header` value: `Name: value` (the value trimmed; it may be empty). */
export function parseHeaderFlag(flag: string): Checked<readonly [string, string]> {
  const colon = flag.indexOf(':');
  const name = colon < 0 ? '' : flag.slice(0, colon).trim();
  if (colon < 0 || !TOKEN.test(name)) return { ok: false, message: `--header \`${flag}\` is not \`Name: value\`` };
  return { ok: true, value: [name, flag.slice(colon + 1).trim()] };
}

/** Parses a `--time` value (ISO 8601, e.g. `2025-01-06T09:30:00Z`) into ms since the epoch. */
export function parseTime(text: string): Checked<number> {
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? { ok: true, value: ms } : { ok: false, message: `time \`${text}\` is not an ISO 8601 date and time` };
}

const SCHEMA_URL = new URL('../schemas/policy-tests.schema.json', import.meta.url);
const SCHEMA_ID = 'https://svc.dev/schemas/policy-tests.schema.json';
let ajv: Ajv | undefined;

/**
 * The schemas/policy-tests.schema.json validators, compiled once per process: the whole test file,
 * or one of its `$defs` (`identity`) for `svc explain --identity`. One schema, so the two commands
 * accept exactly the same identities.
 */
export function policyTestsValidator(def?: 'identity'): ValidateFunction {
  if (!ajv) {
    ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
    ajv.addSchema(JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as object);
  }
  const v = ajv.getSchema(def === undefined ? SCHEMA_ID : `${SCHEMA_ID}#/$defs/${def}`);
  if (!v) throw new Error(`bug: schemas/policy-tests.schema.json: no validator for ${def ?? 'the file'}`);
  return v;
}

/** One ajv error as `/groups/0 must be string` (`additionalProperties` names the property). */
export function describeSchemaError(e: ErrorObject): string {
  const at = e.instancePath === '' ? '' : `${e.instancePath} `;
  if (e.keyword === 'additionalProperties') return `${at}has unknown property \`${String(e.params['additionalProperty'])}\``.trimStart();
  if (e.keyword === 'enum') return `${at}must be one of ${(e.params['allowedValues'] as unknown[]).map((v) => `\`${String(v)}\``).join(', ')}`.trimStart();
  return `${at}${e.message ?? 'is invalid'}`.trimStart();
}

/**
 * Checks an identity given as JSON data (`{"user": ..., "email": ..., "groups": [...], "claims": {...}}`)
 * and fills the defaults (`groups` [], `claims` {}). `null` is the anonymous request.
 */
export function checkIdentity(data: unknown): Checked<Identity | null> {
  if (data === null) return { ok: true, value: null };
  const validate = policyTestsValidator('identity');
  if (!validate(data)) {
    const errors = (validate.errors ?? []).map(describeSchemaError);
    return { ok: false, message: errors.join('; ') };
  }
  const d = data as { user: string; email?: string; groups?: string[]; claims?: Record<string, unknown>; device?: Identity['device'] };
  const identity: Identity = {
    user: d.user,
    groups: d.groups ?? [],
    claims: d.claims ?? {},
    ...(d.email !== undefined ? { email: d.email } : {}),
    ...(d.device !== undefined ? { device: d.device } : {}),
  };
  return { ok: true, value: identity };
}

/**
 * Reads `--identity`: inline JSON, or `@file.json` for a file holding it. Absent: anonymous.
 */
export function readIdentityFlag(flag: string | undefined): Checked<Identity | null> {
  if (flag === undefined) return { ok: true, value: null };
  let text = flag;
  let origin = '--identity';
  if (flag.startsWith('@')) {
    origin = flag.slice(1);
    try {
      text = readFileSync(origin, 'utf8');
    } catch (e) {
      return { ok: false, message: `cannot read identity file \`${origin}\`: ${(e as Error).message}` };
    }
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    return { ok: false, message: `${origin}: the identity is not JSON: ${(e as Error).message}` };
  }
  const checked = checkIdentity(data);
  return checked.ok ? checked : { ok: false, message: `${origin}: not an identity: ${checked.message}` };
}
