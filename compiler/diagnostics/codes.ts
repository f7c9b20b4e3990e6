/**
 * The registry: every diagnostic svc reports. Codes are permanent: never renumbered, never reused.
 * Each range lives in its own file under codes/; this module assembles them and checks that codes
 * and names are unique.
 */
import type { DiagnosticDef } from './define.ts';
import * as internal from './codes/internal.ts';
import * as plan from './codes/plan.ts';
import * as policy from './codes/policy.ts';
import * as routes from './codes/routes.ts';
import * as schema from './codes/schema.ts';
import * as settings from './codes/settings.ts';
import * as sources from './codes/sources.ts';
import * as verify from './codes/verify.ts';

export const D = { ...sources, ...schema, ...settings, ...routes, ...policy, ...plan, ...verify, ...internal };

function collect(): readonly DiagnosticDef<never>[] {
  const all = Object.values(D) as unknown[];
  const defs = all.filter((d): d is DiagnosticDef<never> => typeof d === 'object' && d !== null && 'code' in d && 'severity' in d);
  const codes = new Map<string, string>();
  const names = new Map<string, string>();
  for (const d of defs) {
    if (codes.has(d.code)) throw new Error(`diagnostic code ${d.code} used by ${codes.get(d.code)} and ${d.name}`);
    if (names.has(d.name)) throw new Error(`diagnostic name ${d.name} used by ${names.get(d.name)} and ${d.code}`);
    codes.set(d.code, d.name);
    names.set(d.name, d.code);
  }
  return defs.sort((a, b) => a.code.localeCompare(b.code));
}

/** Every diagnostic definition, sorted by code. */
export const REGISTRY: readonly DiagnosticDef<never>[] = collect();
