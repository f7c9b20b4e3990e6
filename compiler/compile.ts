/**
 * The compiler's public entry point: configuration in, sealed plan (or diagnostics) out. Pure: the
 * same input gives the same bytes. It runs the stage table of pipeline.ts, then sorts and caps the
 * diagnostics.
 */
import type { CompileInput } from './compile-input.ts';
import * as P from './diagnostics/codes/plan.ts';
import { InternalCompilerError } from './diagnostics/codes/internal.ts';
import { Reporter, type Diagnostic } from './diagnostics/diagnostic.ts';
import type { PlanEnvelope } from './plan/types.ts';
import { runStages } from './pipeline.ts';

export interface CompileResult {
  /** Sorted by location, then code; capped at MAX_DIAGNOSTICS. */
  readonly diagnostics: readonly Diagnostic[];
  /** The sealed plan, present when there are no errors. */
  readonly plan: PlanEnvelope | undefined;
}

export const MAX_DIAGNOSTICS = 200;

/** Compiles configuration (file and env) into a sealed plan. Never throws. */
export function compile(input: CompileInput): CompileResult {
  const r = new Reporter();
  let plan: PlanEnvelope | undefined;
  try {
    plan = runStages(input, r);
  } catch (e) {
    r.report(InternalCompilerError, undefined, { detail: e instanceof Error ? (e.stack ?? e.message) : String(e) });
    plan = undefined;
  }
  const diagnostics = sortDiagnostics(r.diagnostics);
  const hasErrors = diagnostics.some((d) => d.severity === 'error');
  return { diagnostics: cap(diagnostics), plan: hasErrors ? undefined : plan };
}

function sortDiagnostics(ds: readonly Diagnostic[]): Diagnostic[] {
  const key = (d: Diagnostic) => d.span?.source.name ?? '';
  return [...ds]
    .map((d, i) => ({ d, i }))
    .sort((a, b) => {
      const fa = key(a.d);
      const fb = key(b.d);
      if (fa !== fb) return fa < fb ? -1 : 1;
      const oa = a.d.span?.start ?? -1;
      const ob = b.d.span?.start ?? -1;
      if (oa !== ob) return oa - ob;
      if (a.d.code !== b.d.code) return a.d.code < b.d.code ? -1 : 1;
      return a.i - b.i;
    })
    .map((x) => x.d);
}

function cap(ds: Diagnostic[]): Diagnostic[] {
  if (ds.length <= MAX_DIAGNOSTICS) return ds;
  const r = new Reporter();
  r.report(P.TooManyDiagnostics, undefined, { shown: MAX_DIAGNOSTICS, total: ds.length });
  // Errors first, so a flood of warnings never hides the error that fails the compile; the kept
  // ones stay in source order (sort is stable).
  const kept = new Set([...ds.filter((d) => d.severity === 'error'), ...ds.filter((d) => d.severity !== 'error')].slice(0, MAX_DIAGNOSTICS));
  return [...ds.filter((d) => kept.has(d)), ...r.diagnostics];
}
