/**
 * Checks plan text for the runtime and the review tools: JSON parse, envelope and format version,
 * schema check (schemas/plan.schema.json), checksum recomputed over the canonical JSON of the body
 * (RFC 8785, the `canonicalize` package, independent of the compiler's writer), deep freeze.
 * A plan that fails any check is refused with a coded error; nothing is guessed or defaulted.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { createRequire } from 'node:module';
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { deepFreeze } from '../../compiler/plan/deep-freeze.ts';
import { SvcError } from '../core/errors.ts';

/** The codes of {@link PlanLoadError}. */
export type PlanLoadErrorCode = 'SVC_ERR_PLAN_JSON' | 'SVC_ERR_PLAN_VERSION' | 'SVC_ERR_PLAN_SCHEMA' | 'SVC_ERR_PLAN_CHECKSUM';

/** Why a plan was refused, with a stable code (runtime/core/errors.ts). */
export class PlanLoadError extends SvcError<PlanLoadErrorCode> {
  constructor(code: PlanLoadErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'PlanLoadError';
  }
}

// `canonicalize` is CommonJS with an ESM-shaped .d.ts; require gives the function itself.
const canonicalize = createRequire(import.meta.url)('canonicalize') as (value: unknown) => string | undefined;

const SCHEMA_URL = new URL('../../schemas/plan.schema.json', import.meta.url);
let validator: ((data: unknown) => boolean) & { errors?: unknown } | undefined;

function validate(data: unknown): string | undefined {
  if (!validator) {
    const ajv = new Ajv({ allErrors: false, strict: false });
    validator = ajv.compile(JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as object);
  }
  if (validator(data)) return undefined;
  const errors = (validator.errors ?? []) as { instancePath?: string; message?: string }[];
  const first = errors[0];
  return first ? `${first.instancePath || '/'} ${first.message ?? 'is invalid'}` : 'does not match the plan schema';
}

/** Parses and checks plan text. Throws `PlanLoadError`. */
export function parsePlan(text: string, origin = 'plan'): PlanEnvelope {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new PlanLoadError('SVC_ERR_PLAN_JSON', `${origin}: not JSON: ${(e as Error).message}`, { cause: e });
  }
  const version = data !== null && typeof data === 'object' ? (data as Record<string, unknown>)['formatVersion'] : undefined;
  if (version !== 1) throw new PlanLoadError('SVC_ERR_PLAN_VERSION', `${origin}: format version ${JSON.stringify(version)} is not supported (this svc reads 1)`);
  const problem = validate(data);
  if (problem) throw new PlanLoadError('SVC_ERR_PLAN_SCHEMA', `${origin}: ${problem}`);
  const plan = data as PlanEnvelope;
  const checksum = `sha256:${createHash('sha256').update(canonicalize(plan.body) ?? '').digest('hex')}`;
  if (checksum !== plan.checksum) throw new PlanLoadError('SVC_ERR_PLAN_CHECKSUM', `${origin}: checksum mismatch: the plan says ${plan.checksum} but its body hashes to ${checksum} (edited by hand?)`);
  return deepFreeze(plan);
}
