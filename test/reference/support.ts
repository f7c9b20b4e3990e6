/**
 * Helpers shared by the reference's tests, the case files and the differential tests: config text
 * from plain data, compiling it to a plan body, and requests with defaults.
 */
import { stringify } from 'yaml';
import type { PlanBody } from '../../compiler/plan/types.ts';
import type { DecisionRequest, RequestHeaders } from '../../runtime/core/types.ts';
import { BASE_SETTINGS, compileText } from '../support/compile-text.ts';

/** YAML config text: `BASE_SETTINGS`, then `settings`, then `routes`. */
export function configText(routes: readonly Record<string, unknown>[], settings: Readonly<Record<string, unknown>> = {}): string {
  return stringify({ ...BASE_SETTINGS, ...settings, routes }, { lineWidth: 0 });
}

/** Compiles config text to a plan body; undefined when the compiler reports an error. */
export function tryCompileBody(text: string): PlanBody | undefined {
  return compileText(text).plan?.body;
}

/** Compiles config text to a plan body, throwing with the error diagnostics when it does not compile. */
export function compileBody(text: string): PlanBody {
  const result = compileText(text);
  if (result.plan === undefined) {
    const errors = result.diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.code} ${d.name}: ${d.message}`);
    throw new Error(`config does not compile:\n${errors.join('\n')}\n---\n${text}`);
  }
  return result.plan.body;
}

/** 2025-06-04T10:30:00Z, a Wednesday. */
export const DEFAULT_NOW_MS = Date.parse('2025-06-04T10:30:00Z');

/**
 * A request with defaults filled in: `GET /` over https from 203.0.113.9 at `DEFAULT_NOW_MS`.
 * `host` (when given) becomes the Host header; `headers` are merged over it.
 */
export function makeRequest(partial: Partial<DecisionRequest> & { readonly host?: string } = {}): DecisionRequest {
  const { host, headers, ...rest } = partial;
  const all: RequestHeaders = { ...(host !== undefined ? { host: [host] } : {}), ...(headers ?? {}) };
  return { method: 'GET', target: '/', scheme: 'https', peer: '203.0.113.9', nowMs: DEFAULT_NOW_MS, ...rest, headers: all };
}
