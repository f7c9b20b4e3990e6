/** Builders for diff tests: plans compiled from small configs on top of BASE_SETTINGS. */
import { stringify } from 'yaml';
import type { PlanEnvelope } from '../../../compiler/plan/types.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

/** A route from `https://<host>` to a local upstream with `extra` fields. */
export function route(host: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { from: `https://${host}`, to: 'http://127.0.0.1:9000', ...extra };
}

/** Compiles a plan with these routes and setting overrides; throws (a test bug) on errors. */
export function planOf(routes: readonly unknown[], settings: Record<string, unknown> = {}, env: Record<string, string> = {}): PlanEnvelope {
  const r = compileText(stringify({ ...BASE_SETTINGS, ...settings, routes }), 'config.yaml', env);
  if (!r.plan) throw new Error(r.diagnostics.map((d) => `${d.code} ${d.message}`).join('\n'));
  return r.plan;
}
