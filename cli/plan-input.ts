/**
 * The plan a review command works on (`svc explain`, `svc test`, `svc diff`): a plan file
 * (`.json` whose top level has `formatVersion`) is loaded and checked; anything else is a config
 * file, compiled as `svc compile` would (diagnostics rendered as text).
 */
import { readFileSync } from 'node:fs';
import { compile, renderText, summaryLine, isSecretPath } from '../compiler/index.ts';
import type { PlanEnvelope } from '../compiler/plan/types.ts';
import { PlanLoadError, parsePlan } from '../runtime/plan/load.ts';
import { nodeInput } from './node-input.ts';
import { looksLikePlan } from '../compiler/plan/plan-text.ts';

export { looksLikePlan } from '../compiler/plan/plan-text.ts';

export type PlanInput =
  | { readonly ok: true; readonly plan: PlanEnvelope; readonly kind: 'plan' | 'config' }
  /** `status` 1: the config has errors; 2: unreadable file or bad plan. `message` is ready to print. */
  | { readonly ok: false; readonly status: 1 | 2; readonly message: string };

/** Loads `path` as a plan or compiles it as a config. Never throws. */
export function loadPlanInput(path: string, env: NodeJS.ProcessEnv = process.env): PlanInput {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    return { ok: false, status: 2, message: `error: cannot read \`${path}\`: ${(e as Error).message}\n` };
  }
  if (looksLikePlan(text)) {
    try {
      return { ok: true, plan: parsePlan(text, path), kind: 'plan' };
    } catch (e) {
      if (e instanceof PlanLoadError) return { ok: false, status: 2, message: `error ${e.code}: ${e.message}\n` };
      throw e;
    }
  }
  const result = compile(nodeInput(path, env));
  if (result.plan) return { ok: true, plan: result.plan, kind: 'config' };
  const ioError = result.diagnostics.some((d) => d.code === 'SVC5002');
  return { ok: false, status: ioError ? 2 : 1, message: `${renderText(result.diagnostics, isSecretPath)}${summaryLine(result.diagnostics)}\n` };
}

