/** Every plan the compiler writes matches schemas/plan.schema.json: golden plans and generated ones. */
import { Ajv } from 'ajv';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { planSchema } from '../../../compiler/plan/plan-schema.ts';
import { prettyJson } from '../../../compiler/plan/canonical-json.ts';
import { compileDir } from '../../support/compile-dir.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

const validate = new Ajv({ allErrors: true, strict: false }).compile(planSchema());
const CASES = join(import.meta.dirname, '../../../fixtures/cases');

function check(plan: unknown): string[] {
  return validate(plan) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
}

describe('plan schema', () => {
  const goldens = existsSync(CASES) ? readdirSync(CASES).filter((d) => existsSync(join(CASES, d, 'plan.json'))) : [];

  it.each(goldens)('golden plan %s matches the schema', (name) => {
    expect(check(JSON.parse(readFileSync(join(CASES, name, 'plan.json'), 'utf8')))).toEqual([]);
  });

  it('the quickstart plan matches the schema', () => {
    const result = compileDir(join(import.meta.dirname, '../../../fixtures/quickstart'));
    expect(result.plan).toBeDefined();
    expect(check(JSON.parse(prettyJson(result.plan)))).toEqual([]);
  });

  it('a plan with every kind of route field matches the schema', () => {
    const config = {
      ...BASE_SETTINGS,
      databroker_storage_type: 'redis',
      databroker_storage_connection_string: 'redis+sentinel://:pw@s1:26379,s2:26379/master/1',
      jwt_claims_headers: ['email', 'X-Team:groups'],
      tracing_provider: 'zipkin',
      tracing_zipkin_endpoint: 'https://zipkin.example.com/api/v2/spans',
      routes: [
        {
          name: 'full',
          from: 'https://a.example.com',
          to: ['https://u1.example.com:8443/base/,3', 'https://u2.example.com/base/,1'],
          prefix: '/app/',
          prefix_rewrite: '/',
          host_rewrite: 'internal.example.com',
          set_request_headers: { 'X-Env': 'prod' },
          remove_request_headers: ['X-Debug'],
          set_response_headers: { 'X-Frame-Options': 'DENY' },
          rewrite_response_headers: [{ header: 'Location', prefix: 'http://internal/', value: 'https://a.example.com/' }],
          timeout: '20s',
          idle_timeout: '1m',
          lb_policy: 'RING_HASH',
          ring_hash_lb_config: { minimum_ring_size: 1024 },
          health_checks: [{ timeout: '1s', interval: '5s', tcp_health_check: { send: { text: '50494e47' }, receive: [{ text: '504f4e47' }] } }],
          outlier_detection: { consecutive_5xx: 3, interval: '10s' },
          allow_websockets: true,
          pass_identity_headers: true,
          policy: 'allow if email is "a@example.com"',
        },
        { from: 'https://r.example.com', redirect: { https_redirect: true, host_redirect: 'b.example.com', response_code: 308 }, allow_public_unauthenticated_access: true },
        { from: 'tcp+https://redis.example.com:6379', to: 'tcp://10.0.0.9:6379', allow_any_authenticated_user: true },
      ],
    };
    const result = compileText(stringify(config));
    expect(result.diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.code} ${d.message}`)).toEqual([]);
    expect(check(JSON.parse(prettyJson(result.plan)))).toEqual([]);
  });

  it('rejects a plan with a wrong field (the schema is not vacuous)', () => {
    const plan = JSON.parse(prettyJson(compileDir(join(import.meta.dirname, '../../../fixtures/quickstart')).plan)) as { body: { routes: { timeoutMs: unknown }[] } };
    plan.body.routes[0]!.timeoutMs = '30s';
    expect(check(plan).length).toBeGreaterThan(0);
  });

  it('generated configs give plans that match the schema', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 4 }), (hosts) => {
        const routes = hosts.map((h, i) => ({ from: `https://${h}.example.com`, path: `/p${i}`, to: `http://10.0.0.${i + 1}`, allow_any_authenticated_user: true }));
        const result = compileText(stringify({ ...BASE_SETTINGS, routes }));
        expect(check(JSON.parse(prettyJson(result.plan)))).toEqual([]);
      }),
      { numRuns: 20 },
    );
  });
});
