/**
 * The metrics credential fails closed (docs/security.md S42): a `metrics_basic_auth` with an empty user
 * name or password, in a plan the compiler did not check (built elsewhere, or a value read only at
 * load), stops the metrics listener from starting with a clear error, instead of letting
 * `Authorization: Basic Og==` open `/metrics`. All credentials here are TEST ONLY.
 */
import { createHash } from 'node:crypto';
import { stringify } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprint } from '../../../../compiler/ir/material.ts';
import type { PlanEnvelope, Secret } from '../../../../compiler/plan/types.ts';
import { basicAuthorized, basicCredential } from '../../../../runtime/observe/metrics/basic-auth.ts';
import { MetricsMaterialError, startMetricsListener } from '../../../../runtime/observe/metrics/listener.ts';
import { BASE_SETTINGS, compileText } from '../../../support/compile-text.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const EMPTY_SIDED = ['prometheus:', ':', ':pw', 'prometheus', ''];

describe('basicCredential', () => {
  it.each(EMPTY_SIDED)('refuses %j, naming the setting and not the value', (pair) => {
    expect(() => basicCredential(b64(pair))).toThrow(/metrics_basic_auth .*non-empty user name and password/);
    try {
      basicCredential(b64(pair));
    } catch (e) {
      if (pair !== '') expect((e as Error).message).not.toContain(b64(pair));
    }
  });

  it('accepts a full pair (a colon in the password belongs to it)', () => {
    expect(basicAuthorized(`Basic ${b64('prom:a:b')}`, basicCredential(b64('prom:a:b')))).toBe(true);
  });

  it('never lets a pair with an empty side pass, even against a credential built by hand', () => {
    const handMade = { digest: createHash('sha256').update('svc-metrics-basic-auth\0').update(':').digest() };
    expect(basicAuthorized('Basic Og==', handMade)).toBe(false);
  });
});

describe('the metrics listener with an empty-sided credential', () => {
  const saved = process.env['SVC_TEST_METRICS_BASIC_AUTH'];
  afterEach(() => {
    if (saved === undefined) delete process.env['SVC_TEST_METRICS_BASIC_AUTH'];
    else process.env['SVC_TEST_METRICS_BASIC_AUTH'] = saved;
  });

  /** A compiled plan whose metrics credential is then replaced, as a plan built elsewhere could be. */
  const planWith = (basicAuth: Secret): PlanEnvelope => {
    const plan = compileText(
      stringify({ ...BASE_SETTINGS, metrics_address: '127.0.0.1:9090', metrics_basic_auth: b64('prom:test-only'), routes: [{ from: 'https://a.example.com', to: 'http://10.0.0.1', policy: 'allow if email is "a@example.com"' }] }),
    ).plan!;
    const body = { ...plan.body, settings: { ...plan.body.settings, metrics: { ...plan.body.settings.metrics, basicAuth } } };
    return { ...plan, body };
  };
  const start = (plan: PlanEnvelope) => startMetricsListener(plan, { scrape: async () => ({ contentType: 'text/plain', body: '' }), ready: {}, listen: { host: '127.0.0.1', port: 0 } });

  it('does not start with an inline `:` (Basic Og==)', async () => {
    await expect(start(planWith({ value: 'Og==', fingerprint: fingerprint('Og==') }))).rejects.toThrow(MetricsMaterialError);
    await expect(start(planWith({ value: 'Og==', fingerprint: fingerprint('Og==') }))).rejects.toThrow(/metrics listener: metrics_basic_auth/);
  });

  it('does not start when the value, read only at load from the environment, has an empty password', async () => {
    process.env['SVC_TEST_METRICS_BASIC_AUTH'] = b64('prometheus:');
    await expect(start(planWith({ ref: 'env:SVC_TEST_METRICS_BASIC_AUTH', fingerprint: fingerprint(b64('prometheus:')) }))).rejects.toThrow(/metrics_basic_auth .*non-empty user name and password/);
  });

  it('starts with a full pair', async () => {
    const listener = await start(planWith({ value: b64('prom:test-only'), fingerprint: fingerprint(b64('prom:test-only')) }));
    await listener.close();
  });
});
