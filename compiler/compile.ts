/**
 * The compiler's public entry point: configuration in, sealed plan (or diagnostics) out. Pure: the
 * same input gives the same bytes. The stages are listed in pipeline.ts.
 */
import type { CompileInput } from './compile-input.ts';
import * as P from './diagnostics/codes/plan.ts';
import { InternalCompilerError } from './diagnostics/codes/internal.ts';
import { Reporter, type Diagnostic } from './diagnostics/diagnostic.ts';
import { lowerRoutes } from './ir/lower-routes.ts';
import { lowerSettings } from './ir/lower-settings.ts';
import type { LowerCtx } from './ir/lower-ctx.ts';
import { mergeLayers } from './merge/merge.ts';
import { checkConsistency } from './plan/consistency.ts';
import { seal } from './plan/seal.ts';
import type { PlanBody, PlanEnvelope, SourceMap } from './plan/types.ts';
import { coerce, type Coerced } from './schema/coerce.ts';
import { schemaCheck } from './schema/check.ts';
import { configSchema } from './schema/config-schema.ts';
import { dropRemovedKeys } from './schema/removed.ts';
import { envKeySpecs } from './settings/env-keys.ts';
import { envLayer } from './sources/env.ts';
import { parseConfigText } from './sources/read.ts';
import { reportReservedKeys } from './sources/reserved-keys.ts';
import { formatLocation, sourceFile, span } from './source/source-file.ts';
import type { MapNode } from './source/tree.ts';
import { RULES } from './validate/rules/index.ts';
import type { RouteInput } from './validate/rule.ts';

export interface CompileResult {
  /** Sorted by location, then code; capped at MAX_DIAGNOSTICS. */
  readonly diagnostics: readonly Diagnostic[];
  /** The sealed plan, present when there are no errors. */
  readonly plan: PlanEnvelope | undefined;
}

export const MAX_DIAGNOSTICS = 200;

const SCHEMA = configSchema();

/** Compiles configuration (file and env) into a sealed plan. Never throws. */
export function compile(input: CompileInput): CompileResult {
  const r = new Reporter();
  let plan: PlanEnvelope | undefined;
  try {
    plan = run(input, r);
  } catch (e) {
    r.report(InternalCompilerError, undefined, { detail: e instanceof Error ? (e.stack ?? e.message) : String(e) });
    plan = undefined;
  }
  const diagnostics = sortDiagnostics(r.diagnostics);
  const hasErrors = diagnostics.some((d) => d.severity === 'error');
  return { diagnostics: cap(diagnostics), plan: hasErrors ? undefined : plan };
}

function run(input: CompileInput, r: Reporter): PlanEnvelope | undefined {
  // 1-2. read and parse
  let fileTree: MapNode | undefined;
  const files = new Set<string>();
  if (input.configPath !== undefined) {
    const res = input.readFile(input.configPath);
    if (!res.ok) {
      r.report(P.ConfigReadFailed, undefined, { file: input.configPath, reason: res.reason });
      return undefined;
    }
    files.add(input.configPath);
    const node = parseConfigText(sourceFile(input.configPath, res.data.toString('utf8')), r);
    if (node?.kind === 'map') fileTree = node;
  }
  const envTree = envLayer(input.env, envKeySpecs(), r);
  // A config file that could not be read as a map of settings stops here: checking the settings
  // without it would bury its syntax error under every setting it failed to provide.
  if (input.configPath !== undefined && fileTree === undefined) return undefined;
  // 3. merge
  const merged = mergeLayers([fileTree, envTree]);
  // 4. schema
  reportReservedKeys(merged, r);
  const cleaned = dropRemovedKeys(merged, r);
  const coerced = coerce(cleaned, SCHEMA);
  const bad = schemaCheck(coerced, r);
  // 5-6. lower settings and routes (policies included); values with schema errors are left out
  const cx: LowerCtx = { r, input, index: coerced.index, files };
  const data = withoutBadSettings(coerced, bad);
  const settings = lowerSettings(data, cx);
  const routeInputs = collectRoutes(coerced);
  const badRoutes = routesWithBadValues(bad);
  const healthy = routeInputs.filter((ri) => !badRoutes.has(ri.path));
  const lowered = lowerRoutes(healthy.map((h) => h.raw), healthy.map((h) => h.path), healthy.map((h) => h.index), settings, cx);
  const pathByIndex = new Map(healthy.map((h) => [h.index, h.path] as const));
  const byPath = new Map(lowered.map((route) => [pathByIndex.get(route.index)!, route] as const));
  const routes: RouteInput[] = routeInputs.map((ri) => ({ raw: ri.raw, path: ri.path, lowered: byPath.get(ri.path) }));
  const body: PlanBody = { settings, routes: lowered };
  // Only for a config that is otherwise sound: after an error the missing routes are noise.
  if (routeInputs.length === 0 && r.errorCount === 0) {
    // At the empty `routes` value, else at the start of the config file (routes belong there).
    const at = coerced.index.get('routes')?.node.span ?? (fileTree ? span(fileTree.span.source, 0, 0) : undefined);
    r.report(P.NoRoutes, at, {}, 'routes');
  }
  // 7. validate
  for (const rule of RULES) rule.check({ body, config: coerced.data, routes, index: coerced.index }, r);
  if (r.errorCount > 0) return undefined;
  // 8-10. emit, check, seal
  const sourceMap = buildSourceMap(coerced, routes);
  for (const problem of checkConsistency(body)) r.report(P.PlanInconsistent, undefined, { detail: problem });
  if (r.errorCount > 0) return undefined;
  return seal(body, [...files], sourceMap);
}

/** The route paths (`routes[3]`, `policy[0]`) that hold or are a value the schema rejected. */
function routesWithBadValues(bad: ReadonlySet<string>): Set<string> {
  const out = new Set<string>();
  for (const p of bad) {
    const m = /^((?:routes|policy)\[\d+\])/.exec(p);
    if (m) out.add(m[1]!);
  }
  return out;
}

interface RawRoute {
  readonly raw: Record<string, unknown>;
  readonly path: string;
  readonly index: number;
}

/** Routes from `routes` then the deprecated `policy` key, numbered in that order. */
function collectRoutes(c: Coerced): RawRoute[] {
  const out: RawRoute[] = [];
  for (const key of ['routes', 'policy']) {
    const list = c.data[key];
    if (!Array.isArray(list)) continue;
    list.forEach((raw, i) => {
      if (raw && typeof raw === 'object' && !Array.isArray(raw)) out.push({ raw: raw as Record<string, unknown>, path: `${key}[${i}]`, index: out.length });
    });
  }
  return out;
}

function withoutBadSettings(c: Coerced, bad: ReadonlySet<string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(c.data)) {
    const poisoned = [...bad].some((p) => p === k || p.startsWith(`${k}.`) || p.startsWith(`${k}[`));
    if (!poisoned || k === 'routes' || k === 'policy') out[k] = v;
  }
  return out;
}

function buildSourceMap(c: Coerced, routes: readonly RouteInput[]): SourceMap {
  const settings: Record<string, string> = {};
  for (const key of Object.keys(c.data).sort()) {
    const loc = c.index.get(key);
    if (loc) settings[key] = formatLocation(loc.node.span);
  }
  return {
    settings,
    routes: routes
      .filter((ri) => ri.lowered)
      .map((ri) => {
        const fields: Record<string, string> = {};
        for (const f of Object.keys(ri.raw).sort()) {
          const loc = c.index.get(`${ri.path}.${f}`);
          if (loc) fields[f] = formatLocation(loc.node.span);
        }
        const loc = c.index.get(ri.path);
        return { at: loc ? formatLocation(loc.node.span) : ri.path, fields };
      }),
  };
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
