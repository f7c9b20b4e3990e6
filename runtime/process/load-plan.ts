/**
 * The plan a process serves, loaded the one way every role loads it (at start and on each reload):
 * the config compiled, or the plan file read and checked; then refused when it uses a setting
 * `svc run` does not implement (runtime/plan/capabilities.ts). Failures are `RunError`s, which
 * `svc run` prints and exits with (docs/running.md "Exit codes").
 *
 * The compiler is imported only when a config is compiled: a process serving a plan file never
 * loads it (nor its parser generator), so its heap holds no more than it serves with.
 */
import { readFileSync } from 'node:fs';
import type { Diagnostic } from '../../compiler/index.ts';
import { looksLikePlan } from '../../compiler/plan/plan-text.ts';
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { SvcError } from '../core/errors.ts';
import { refusal, refusalEntries, UNSUPPORTED_SETTING } from '../plan/capabilities.ts';
import { parsePlan, PlanLoadError } from '../plan/load.ts';
import { ShadowError } from '../generation/shadow-provisioner.ts';

/** Where the plan comes from, and who hears the compiler's warnings. */
export interface PlanSource {
  /** Exactly one of the two. */
  readonly configPath?: string;
  readonly planPath?: string;
  readonly env?: NodeJS.ProcessEnv;
  /**
   * Told the compiler's warnings each time the config compiles: rendered as text (empty for none),
   * as diagnostics, and the plan they came with (whose log settings say how to print them).
   */
  readonly onWarnings?: (text: string, warnings: readonly Diagnostic[], plan: PlanEnvelope) => void;
}

type RunErrorCode = 'SVC_ERR_CONFIG_INVALID' | 'SVC_ERR_PLAN_INVALID' | typeof UNSUPPORTED_SETTING;

/**
 * Thrown when the first plan cannot be loaded: `svc run` exits with the message (text), or with
 * `details` as JSON log lines: the compiler's error diagnostics (`SVC_ERR_CONFIG_INVALID`) or one
 * entry per refused setting (`SVC_ERR_UNSUPPORTED_SETTING`); empty when the message is all there is.
 */
export class RunError extends SvcError<RunErrorCode> {
  constructor(
    code: RunErrorCode,
    message: string,
    readonly details: { readonly diagnostics?: readonly Diagnostic[]; readonly refused?: readonly Record<string, unknown>[] } = {},
  ) {
    super(code, message);
    this.name = 'RunError';
  }
}

/**
 * Loads the plan to serve: compiles the config, or reads and checks the plan file; a plan using a
 * setting svc run does not implement is refused (runtime/plan/capabilities.ts). Throws `RunError`.
 */
export async function loadForRun(source: PlanSource): Promise<PlanEnvelope> {
  const plan = await load(source);
  const refused = refusal(plan);
  if (refused !== undefined) throw new RunError(UNSUPPORTED_SETTING, refused, { refused: refusalEntries(plan) });
  return plan;
}

/**
 * Loads the candidate plan of `svc run --shadow FILE` the way the enforced plan is loaded: a plan
 * file read and checked (checksum, contract), or a config compiled, told apart by the file's text as
 * `svc run FILE` tells them; refused when it uses a setting svc run does not implement. Throws
 * `ShadowError` (`SVC_ERR_SHADOW_INVALID`), naming the file, with the loader's error as its cause;
 * the caller keeps serving the enforced plan (runtime/generation/shadow-provisioner.ts).
 */
export async function loadShadowForRun(path: string, env?: NodeJS.ProcessEnv): Promise<PlanEnvelope> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ShadowError('SVC_ERR_SHADOW_INVALID', `cannot read the shadow plan \`${path}\`: ${(e as Error).message}`);
  }
  try {
    return await loadForRun(looksLikePlan(text) ? { planPath: path, ...(env ? { env } : {}) } : { configPath: path, ...(env ? { env } : {}) });
  } catch (e) {
    if (e instanceof RunError) throw new ShadowError('SVC_ERR_SHADOW_INVALID', `shadow plan \`${path}\` (${e.code}): ${e.message}`, { cause: e });
    throw e;
  }
}

/**
 * `--shadow` only where this process decides requests itself, all-in-one: the proxy role's policies
 * are decided by the authorize service, and the authenticate role decides svc's own endpoints only
 * (docs/running.md "Shadow plans"). Refused loudly rather than run half.
 */
export function refuseShadowOutsideAllInOne(shadow: string | undefined, plan: PlanEnvelope): void {
  const services = plan.body.settings.mode.services;
  if (shadow !== undefined && services !== 'all') throw new ShadowError('SVC_ERR_SHADOW_UNSUPPORTED_ROLE', `--shadow is supported by an all-in-one svc only (services: all); this plan's role is \`${services}\`: the proxy role's policies are decided by the authorize service, and the other roles decide no route. Run the shadow on an all-in-one svc, or compare from logs with \`svc diff --replay\``);
}

async function load(source: PlanSource): Promise<PlanEnvelope> {
  if (source.planPath !== undefined) {
    try {
      return parsePlan(readFileSync(source.planPath, 'utf8'), source.planPath);
    } catch (e) {
      if (e instanceof PlanLoadError || (e as NodeJS.ErrnoException).code !== undefined) throw new RunError('SVC_ERR_PLAN_INVALID', (e as Error).message);
      throw e;
    }
  }
  const { compile, renderText, isSecretPath } = await import('../../compiler/index.ts');
  const result = compile({
    ...(source.configPath !== undefined ? { configPath: source.configPath } : {}),
    env: source.env ?? process.env,
    readFile: (p) => {
      try {
        return { ok: true, data: readFileSync(p) };
      } catch (e) {
        return { ok: false, reason: (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message };
      }
    },
  });
  if (!result.plan) {
    const errors = result.diagnostics.filter((d) => d.severity === 'error');
    throw new RunError('SVC_ERR_CONFIG_INVALID', renderText(errors, isSecretPath), { diagnostics: errors });
  }
  const warnings = result.diagnostics.filter((d) => d.severity !== 'error');
  source.onWarnings?.(renderText(warnings, isSecretPath), warnings, result.plan);
  return result.plan;
}
