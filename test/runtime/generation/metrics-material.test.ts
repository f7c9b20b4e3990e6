/**
 * The metrics listener's material is a part of the generation (runtime/generation/generation.ts
 * `metricsMaterial`): read while the generation is built, so a plan whose credential cannot be used
 * is refused and the plan in service stays; handed to the listener only once its generation is
 * swapped in; kept as it is by a renewal that reads the same material (an unchanged reload swaps
 * nothing); not read at all in a process without a metrics listener (a cluster worker).
 * All credentials here are TEST ONLY.
 */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { PlanEnvelope } from '../../../compiler/plan/types.ts';
import { startProcessGenerations } from '../../../runtime/generation/generation.ts';
import { PlanRefusedError } from '../../../runtime/generation/provision.ts';
import type { MetricsMaterial } from '../../../runtime/observe/metrics/listener.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A plan with a metrics listener whose `/metrics` credential is `pair` (base64 of `user:password`). */
const planWith = (pair: string, routeName = 'a'): PlanEnvelope =>
  compileText(
    stringify({ ...BASE_SETTINGS, metrics_address: '127.0.0.1:9090', metrics_basic_auth: b64(pair), routes: [{ name: routeName, from: 'https://a.example.com', to: 'http://10.0.0.1', allow_public_unauthenticated_access: true }] }),
  ).plan!;

/** A stand-in listener that records the material it is handed. */
function recordingListener() {
  const used: MetricsMaterial[] = [];
  let listening = false;
  return { used, listen: () => void (listening = true), target: () => (listening ? { use: (m: MetricsMaterial) => void used.push(m) } : undefined) };
}

describe('the metrics material part', () => {
  it('is read with the first generation, and handed to the listener only with a generation swapped in', async () => {
    const listener = recordingListener();
    const g = await startProcessGenerations(planWith('prom:one'), { metricsListener: listener.target });
    const first = g.store.current.metricsMaterial;
    expect(first?.credential).not.toBeNull();
    // The listener was not listening yet: it starts with the first generation's material itself.
    expect(listener.used).toEqual([]);
    listener.listen();

    const prepared = await g.prepare(planWith('prom:two'));
    expect(listener.used).toEqual([]); // built, not in service
    prepared.commit();
    expect(listener.used).toHaveLength(1);
    expect(listener.used[0]).toBe(g.store.current.metricsMaterial);
    expect(listener.used[0]).not.toEqual(first);
    await g.close();
  });

  it('refuses a plan whose credential cannot be used, and keeps the one in service', async () => {
    const listener = recordingListener();
    const g = await startProcessGenerations(planWith('prom:one'), { metricsListener: listener.target });
    listener.listen();
    const inService = g.store.current;
    const plan = planWith('prom:one', 'b');
    const broken: PlanEnvelope = { ...plan, body: { ...plan.body, settings: { ...plan.body.settings, metrics: { ...plan.body.settings.metrics, basicAuth: { ref: 'env:SVC_TEST_METRICS_MATERIAL_UNSET', fingerprint: 'x' } } } } };
    await expect(g.prepare(broken)).rejects.toThrow(PlanRefusedError);
    await expect(g.prepare(broken)).rejects.toThrow(/metrics listener: /);
    expect(g.store.current).toBe(inService);
    expect(listener.used).toEqual([]);
    await g.close();
  });

  it('is kept by a renewal that reads the same material, so nothing is swapped', async () => {
    const plan = planWith('prom:one');
    const g = await startProcessGenerations(plan, { metricsListener: () => undefined });
    const prepared = await g.prepare(plan);
    expect(prepared.changed).toBe(false);
    await g.close();
  });

  it('is not read in a process without a metrics listener', async () => {
    const plan = planWith('prom:one');
    const broken: PlanEnvelope = { ...plan, body: { ...plan.body, settings: { ...plan.body.settings, metrics: { ...plan.body.settings.metrics, basicAuth: { ref: 'env:SVC_TEST_METRICS_MATERIAL_UNSET', fingerprint: 'x' } } } } };
    const g = await startProcessGenerations(broken, {});
    expect(g.store.current.metricsMaterial).toBeNull();
    await g.close();
  });
});
