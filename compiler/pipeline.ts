/**
 * The compiler's architecture as a named, ordered stage table (docs/architecture.md §1), and the table is what
 * `compile()` runs: each stage reads what earlier stages left in the work record and adds its own
 * part. Stages report user mistakes through the reporter and never throw for them; a stage answers
 * `stop` when what follows could only bury its errors under consequences of them.
 */
import type { CompileInput } from './compile-input.ts';
import * as P from './diagnostics/codes/plan.ts';
import type { Reporter } from './diagnostics/diagnostic.ts';
import type { LowerCtx } from './ir/lower-ctx.ts';
import { lowerRoutes } from './ir/lower-routes.ts';
import { lowerSettings } from './ir/lower-settings.ts';
import { mergeLayers } from './merge/merge.ts';
import { checkConsistency } from './plan/consistency.ts';
import { sealBuilt } from './plan/seal.ts';
import type { PlanBody, PlanEnvelope, PlanSettings, Route, SourceMap } from './plan/types.ts';
import { schemaCheck } from './schema/check.ts';
import { coerce, type Coerced } from './schema/coerce.ts';
import { configSchema } from './schema/config-schema.ts';
import { dropRemovedKeys } from './schema/removed.ts';
import { envKeySpecs } from './settings/env-keys.ts';
import { COMMA_LIST_SETTINGS } from './settings/table.ts';
import { formatLocation, sourceFile, span, type SourceFile } from './source/source-file.ts';
import type { MapEntry, MapNode } from './source/tree.ts';
import { envLayer } from './sources/env.ts';
import { parseConfigText } from './sources/read.ts';
import { reportReservedKeys } from './sources/reserved-keys.ts';
import type { RouteInput } from './validate/rule.ts';
import { RULES } from './validate/rules/index.ts';

/** What the stages build, part by part; each field is set by the stage named beside it. */
export interface Work {
  readonly input: CompileInput;
  /** Every file the plan depends on (the config file, files it names): watched by `svc run`. */
  readonly files: Set<string>;
  /** read */
  configFile?: SourceFile;
  /** parse */
  fileTree?: MapNode;
  envTree?: MapNode;
  /** merge */
  merged?: MapNode;
  /** schema: the coerced tree and the paths of values the schema rejected */
  coerced?: Coerced;
  bad?: ReadonlySet<string>;
  /** lower (settings and routes; the `policy` stage runs inside route lowering's policy fields) */
  settings?: PlanSettings;
  routeInputs?: readonly RouteInput[];
  loweredRoutes?: readonly Route[];
  /** validate */
  body?: PlanBody;
  /** emit */
  sourceMap?: SourceMap;
  /** seal */
  plan?: PlanEnvelope;
}

export interface Stage {
  readonly n: number;
  readonly name: string;
  readonly does: string;
  readonly run: (w: Work, r: Reporter) => 'continue' | 'stop';
}

const SCHEMA = configSchema();

export const STAGES: readonly Stage[] = [
  {
    n: 1,
    name: 'read',
    does: 'read the config file through the injected fs; env vars are sources too',
    run: (w, r) => {
      const path = w.input.configPath;
      if (path === undefined) return 'continue';
      const res = w.input.readFile(path);
      if (!res.ok) {
        r.report(P.ConfigReadFailed, undefined, { file: path, reason: res.reason });
        return 'stop';
      }
      w.files.add(path);
      w.configFile = sourceFile(path, res.data.toString('utf8'));
      return 'continue';
    },
  },
  {
    n: 2,
    name: 'parse',
    does: 'parse each source (YAML, JSON, TOML, properties, env) into one tree with spans',
    run: (w, r) => {
      if (w.configFile) {
        const node = parseConfigText(w.configFile, r);
        if (node?.kind === 'map') w.fileTree = node;
      }
      w.envTree = envLayer(w.input.env, envKeySpecs(), r);
      // A config file that could not be read as a map of settings stops here: checking the settings
      // without it would bury its syntax error under every setting it failed to provide.
      return w.configFile && !w.fileTree ? 'stop' : 'continue';
    },
  },
  {
    n: 3,
    name: 'merge',
    does: 'merge layers: defaults < file < env, provenance kept per value',
    run: (w) => {
      w.merged = mergeLayers([w.fileTree, w.envTree]);
      return 'continue';
    },
  },
  {
    n: 4,
    name: 'schema',
    does: 'drop removed keys, coerce untyped text, check the JSON schema (ajv)',
    run: (w, r) => {
      reportReservedKeys(w.merged!, r);
      w.coerced = coerce(dropRemovedKeys(w.merged!, r), SCHEMA, COMMA_LIST_SETTINGS);
      w.bad = schemaCheck(w.coerced, r);
      return 'continue';
    },
  },
  {
    n: 5,
    name: 'lower',
    does: 'lower settings and routes to the typed IR: ms, parsed URLs, secrets as refs, files read',
    run: (w, r) => {
      const coerced = w.coerced!;
      const cx: LowerCtx = { r, input: w.input, index: coerced.index, files: w.files };
      // Values with schema errors are left out.
      w.settings = lowerSettings(withoutBadSettings(coerced, w.bad!), cx);
      const routeInputs = collectRoutes(coerced);
      const badRoutes = routesWithBadValues(w.bad!);
      const healthy = routeInputs.filter((ri) => !badRoutes.has(ri.path));
      // Stage 6 (policy) runs here, per route, as each route's policy fields are lowered.
      const lowered = lowerRoutes(healthy.map((h) => h.raw), healthy.map((h) => h.path), healthy.map((h) => h.index), w.settings, cx);
      const pathByIndex = new Map(healthy.map((h) => [h.index, h.path] as const));
      const byPath = new Map(lowered.map((route) => [pathByIndex.get(route.index)!, route] as const));
      w.loweredRoutes = lowered;
      w.routeInputs = routeInputs.map((ri) => ({ raw: ri.raw, path: ri.path, lowered: byPath.get(ri.path) }));
      return 'continue';
    },
  },
  {
    n: 6,
    name: 'policy',
    does: 'parse policies (documents and text syntax) and desugar legacy options into the IR',
    // Policies are parsed while their route is lowered (stage 5), where their spans and the route's
    // context are at hand; this entry names the stage and keeps its number.
    run: () => 'continue',
  },
  {
    n: 7,
    name: 'validate',
    does: 'run every validation rule; all errors are reported',
    run: (w, r) => {
      const body: PlanBody = { routes: w.loweredRoutes!, settings: w.settings! };
      w.body = body;
      // Only for a config that is otherwise sound: after an error the missing routes are noise.
      if (w.routeInputs!.length === 0 && r.errorCount === 0) {
        // At the empty `routes` value, else at the start of the config file (routes belong there).
        const at = w.coerced!.index.get('routes')?.node.span ?? (w.fileTree ? span(w.fileTree.span.source, 0, 0) : undefined);
        r.report(P.NoRoutes, at, {}, 'routes');
      }
      for (const rule of RULES) rule.check({ body, config: w.coerced!.data, routes: w.routeInputs!, index: w.coerced!.index, readFile: w.input.readFile }, r);
      return r.errorCount > 0 ? 'stop' : 'continue';
    },
  },
  {
    n: 8,
    name: 'emit',
    does: 'emit the plan body and its source map',
    run: (w) => {
      w.sourceMap = buildSourceMap(w.coerced!, w.routeInputs!);
      return 'continue';
    },
  },
  {
    n: 9,
    name: 'consistency',
    does: 'check cross-references of the emitted plan',
    run: (w, r) => {
      for (const problem of checkConsistency(w.body!)) r.report(P.PlanInconsistent, undefined, { detail: problem });
      return r.errorCount > 0 ? 'stop' : 'continue';
    },
  },
  {
    n: 10,
    name: 'seal',
    does: 'canonical JSON, checksum, deep freeze',
    run: (w) => {
      // The body was built for this plan and nothing reads it after: sealed in place where it can be.
      w.plan = sealBuilt(w.body!, [...w.files], w.sourceMap!);
      return 'continue';
    },
  },
];

/** Runs the stage table in order; the sealed plan, or undefined when a stage stopped. */
export function runStages(input: CompileInput, r: Reporter): PlanEnvelope | undefined {
  const w: Work = { input, files: new Set() };
  for (const stage of STAGES) if (stage.run(w, r) === 'stop') return undefined;
  return w.plan;
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

/** The source map, frozen as it is built (the sealed plan is frozen deeply; deepFreeze stops at it). */
function buildSourceMap(c: Coerced, routes: readonly RouteInput[]): SourceMap {
  const settings: Record<string, string> = {};
  for (const key of Object.keys(c.data).sort()) {
    const loc = c.index.get(key);
    if (loc) settings[key] = formatLocation(loc.node.span);
  }
  return Object.freeze({
    settings: Object.freeze(settings),
    routes: Object.freeze(
      routes
        .filter((ri) => ri.lowered)
        .map((ri) => {
          const loc = c.index.get(ri.path);
          const fields: Record<string, string> = {};
          if (c.index.distinct && loc?.node.kind === 'map') {
            // No two nodes share a path: each field's node is the route's entry of that key, and
            // the route's keys are its entries' (none written twice).
            for (const e of entriesByKey(loc.node.entries)) fields[e.key] = formatLocation(e.value.span);
          } else {
            for (const f of sortedKeys(ri.raw)) {
              const at = c.index.get(`${ri.path}.${f}`);
              if (at) fields[f] = formatLocation(at.node.span);
            }
          }
          return Object.freeze({ at: loc ? formatLocation(loc.node.span) : ri.path, fields: Object.freeze(fields) });
        }),
    ),
  });
}

/**
 * `Object.keys(o).sort()`, sorted in place by insertion: a route has a few keys, and Array sort
 * allocates a work copy each time (10,000 routes, 10,000 copies).
 */
function sortedKeys(o: object): string[] {
  const keys = Object.keys(o);
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    for (; j >= 0 && keys[j]! > key; j--) keys[j + 1] = keys[j]!;
    keys[j + 1] = key;
  }
  return keys;
}

/** A map's entries in the order of their keys (as `Object.keys(o).sort()` orders them), sorted by insertion. */
function entriesByKey(entries: readonly MapEntry[]): MapEntry[] {
  const out = entries.slice();
  for (let i = 1; i < out.length; i++) {
    const e = out[i]!;
    let j = i - 1;
    for (; j >= 0 && out[j]!.key > e.key; j--) out[j + 1] = out[j]!;
    out[j + 1] = e;
  }
  return out;
}
