/**
 * schemas/config.schema.json, the schema editors and CI linters use, agrees with the compiler: it
 * loads in Ajv's strict mode, and for each kind of setting (duration, bool, integer, number, URL,
 * `host:port`, enum, list, map, base64 secret, string) the schema and `svc compile` accept and
 * reject the same values, in a table of samples and in generated ones.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { BASE_SETTINGS, TEST_SECRET, compileText } from '../../support/compile-text.ts';

const SCHEMA = JSON.parse(readFileSync(join(import.meta.dirname, '../../../schemas/config.schema.json'), 'utf8')) as Record<string, unknown>;
const ROUTE = { from: 'https://app.example.com', to: 'http://127.0.0.1:9000', allow_any_authenticated_user: true };

let validator: ValidateFunction | undefined;
function schemaAccepts(config: Record<string, unknown>): boolean {
  validator ??= new Ajv({ strict: true, allErrors: true }).compile(SCHEMA);
  return validator(config);
}

/** True when the compiler reports no error at `path` or inside it (other settings may only warn). */
function compilerAccepts(config: Record<string, unknown>, path: string): boolean {
  const r = compileText(stringify(config), 'config.yaml');
  const at = (p: string | undefined) => p === path || p?.startsWith(`${path}[`) === true || p?.startsWith(`${path}.`) === true;
  return !r.diagnostics.some((d) => d.severity === 'error' && at(d.path));
}

/** Both verdicts for `key: value` on top of a valid config (`route: true`: a field of the route). */
function verdicts(key: string, value: unknown, route = false): { schema: boolean; compiler: boolean } {
  const config = route ? { ...BASE_SETTINGS, routes: [{ ...ROUTE, [key]: value }] } : { ...BASE_SETTINGS, [key]: value, routes: [ROUTE] };
  return { schema: schemaAccepts(config), compiler: compilerAccepts(config, route ? `routes[0].${key}` : key) };
}

/** kind → [key, accepted samples, rejected samples]. */
const SAMPLES: Record<string, readonly [string, readonly unknown[], readonly unknown[]]> = {
  duration: ['timeout_read', ['30s', '1h45m', '1.5h', '250ms', '0', 0], [30, '30', 'abc', '-5s', '5 m', true, 1.5]],
  bool: ['cookie_http_only', [true, false], ['yes', 'true', 1]],
  uint: ['xff_num_trusted_hops', [0, 3], [-1, 1.5, '3', 4294967296]],
  number: ['tracing_sample_rate', [0.5, 1], ['often']],
  url: ['signout_redirect_url', ['https://example.com/', 'HTTP://example.com:8080/x'], ['example.com', 'https://', 'ftp://example.com', '/path', 5]],
  'url (any scheme)': ['tracing_zipkin_endpoint', ['https://zipkin.example.com/api', 'grpc://collector:4317'], ['collector:4317', 'https://']],
  hostport: ['metrics_address', [':9090', '127.0.0.1:9090', '[::1]:9090', 'localhost:00080'], ['9090', ':0', ':65536', 'localhost', ':123456', 5]],
  enum: ['log_level', ['debug', 'error'], ['verbose', 'INFO']],
  list: ['idp_scopes', [['openid', 'email'], []], ['openid', [1]]],
  map: ['idp_request_params', [{ prompt: 'login' }], [['prompt'], { prompt: 1 }]],
  secret32: ['cookie_secret', [TEST_SECRET, TEST_SECRET.replace(/=$/, '')], ['abc', Buffer.alloc(16, 1).toString('base64'), `${TEST_SECRET}AAAA`, 5]],
  string: ['cookie_name', ['_svc_session'], [5, ['a']]],
};

describe('schemas/config.schema.json', () => {
  it("compiles in Ajv's strict mode", () => {
    expect(() => new Ajv({ strict: true }).compile(SCHEMA)).not.toThrow();
  });

  it.each(Object.entries(SAMPLES))('agrees with the compiler on %s values', (_kind, [key, good, bad]) => {
    for (const v of good) expect(verdicts(key, v), `${key}: ${JSON.stringify(v)}`).toEqual({ schema: true, compiler: true });
    for (const v of bad) expect(verdicts(key, v), `${key}: ${JSON.stringify(v)}`).toEqual({ schema: false, compiler: false });
  });

  it('agrees with the compiler on route durations (an integer is rejected by both)', () => {
    expect(verdicts('timeout', '10s', true)).toEqual({ schema: true, compiler: true });
    expect(verdicts('timeout', '500ms', true)).toEqual({ schema: true, compiler: true });
    expect(verdicts('timeout', 30, true)).toEqual({ schema: false, compiler: false });
    expect(verdicts('timeout', 'soon', true)).toEqual({ schema: false, compiler: false });
  });

  it('agrees with the compiler on generated durations and addresses', () => {
    // Small alphabets so the grammar's edges come up; short enough that no duration overflows 2^53 ms.
    const text = (chars: string[]) => fc.array(fc.constantFrom(...chars), { maxLength: 8 }).map((a) => a.join(''));
    fc.assert(
      fc.property(fc.oneof(text(['1', '0', '5', '.', 's', 'm', 'h', 'u', 'n', 'µ', ' ']), fc.integer({ min: -2, max: 100 })), (v) => {
        const { schema, compiler } = verdicts('timeout_idle', v);
        expect(schema, JSON.stringify(v)).toBe(compiler);
      }),
      { numRuns: 150 },
    );
    fc.assert(
      fc.property(text([':', '1', '0', '6', '5', '[', ']', 'a', '.', '-', ' ']), (v) => {
        const { schema, compiler } = verdicts('metrics_address', v);
        expect(schema, JSON.stringify(v)).toBe(compiler);
      }),
      { numRuns: 150 },
    );
  });
});
