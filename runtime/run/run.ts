/**
 * `svc run`: serve a plan file, or compile a config and serve it, and reload on change (DESIGN.md
 * §1): watch the config or plan and every file it refers to; on change reload (runtime/run/reload.ts:
 * build the next generation fully, swap once; errors keep the old plan and say why), and let
 * in-flight requests finish on the generation they started with.
 */
import { readFileSync } from 'node:fs';
import { watch, type FSWatcher } from 'chokidar';
import { compile, renderText, isSecretPath } from '../../compiler/index.ts';
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { startAutocert } from '../listen/acme/start.ts';
import type { AutocertManager, AutocertOptions } from '../listen/acme/manager.ts';
import { refusal, UNSUPPORTED_SETTING } from '../plan/capabilities.ts';
import { parsePlan, PlanLoadError } from '../plan/load.ts';
import { lazyEphemeralKey, startGenerations, type ServedStore } from './generation.ts';
import { createReloader, type ReloadResult } from './reload.ts';
import { serve, type Listening, type ServeOptions } from './serve.ts';

export interface RunOptions extends ServeOptions {
  /** Exactly one of the two. */
  readonly configPath?: string;
  readonly planPath?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Reload when the watched files change (default true). */
  readonly watch?: boolean;
  /** Told the compiler's warnings (rendered as text; empty for none) each time the config compiles. */
  readonly onWarnings?: (text: string) => void;
  /** Told each plan svc starts serving: the first, and each one swapped in (log settings follow it). */
  readonly onPlan?: (plan: PlanEnvelope) => void;
  /** Autocert timing: renewal time, directory polling, back-off (defaults in runtime/listen/acme/). */
  readonly autocertTiming?: Pick<AutocertOptions, 'renewalTime' | 'pollMs' | 'backoff' | 'ocsp'>;
}

export type { ReloadResult } from './reload.ts';

export interface Running {
  readonly store: ServedStore;
  readonly listening: Listening;
  /** The autocert manager, when the first plan sets `autocert` (runtime/listen/acme/manager.ts). */
  readonly autocert: AutocertManager | null;
  /** Reloads now (what a file change does). */
  reload(): Promise<ReloadResult>;
  /** The last reload's outcome (for `config_last_reload_success`). */
  readonly lastReload: () => ReloadResult | undefined;
  close(): Promise<void>;
}

/** Thrown when the first plan cannot be loaded: `svc run` exits with the message. */
export class RunError extends Error {
  constructor(
    readonly code: 'SVC_ERR_CONFIG_INVALID' | 'SVC_ERR_PLAN_INVALID' | typeof UNSUPPORTED_SETTING,
    message: string,
  ) {
    super(message);
    this.name = 'RunError';
  }
}

/**
 * Loads the plan to serve: compiles the config, or reads and checks the plan file; a plan using a
 * setting svc run does not implement is refused (runtime/plan/capabilities.ts). Throws `RunError`.
 */
export function loadForRun(options: Pick<RunOptions, 'configPath' | 'planPath' | 'env' | 'onWarnings'>): PlanEnvelope {
  const plan = load(options);
  const refused = refusal(plan);
  if (refused !== undefined) throw new RunError(UNSUPPORTED_SETTING, refused);
  return plan;
}

function load(options: Pick<RunOptions, 'configPath' | 'planPath' | 'env' | 'onWarnings'>): PlanEnvelope {
  if (options.planPath !== undefined) {
    try {
      return parsePlan(readFileSync(options.planPath, 'utf8'), options.planPath);
    } catch (e) {
      if (e instanceof PlanLoadError || (e as NodeJS.ErrnoException).code !== undefined) throw new RunError('SVC_ERR_PLAN_INVALID', (e as Error).message);
      throw e;
    }
  }
  const result = compile({
    ...(options.configPath !== undefined ? { configPath: options.configPath } : {}),
    env: options.env ?? process.env,
    readFile: (p) => {
      try {
        return { ok: true, data: readFileSync(p) };
      } catch (e) {
        return { ok: false, reason: (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message };
      }
    },
  });
  if (!result.plan) throw new RunError('SVC_ERR_CONFIG_INVALID', renderText(result.diagnostics.filter((d) => d.severity === 'error'), isSecretPath));
  options.onWarnings?.(renderText(result.diagnostics.filter((d) => d.severity !== 'error'), isSecretPath));
  return result.plan;
}

/** Starts serving. Resolves once the listener listens. */
export async function run(options: RunOptions): Promise<Running> {
  const plan = loadForRun(options);
  // Before anything logs: the plan's log settings apply to its own generation's lines.
  options.onPlan?.(plan);
  // Process-wide, outside generations: certificates outlive plans; each swap updates the names.
  const autocert = startAutocert(plan.body, { ...options.autocertTiming, ...(options.log ? { log: options.log } : {}) });
  const generations = await startGenerations(plan, {
    scheme: plan.body.settings.server.insecure ? 'http' : 'https',
    ephemeralKey: lazyEphemeralKey(options.log),
    ...(options.log ? { log: options.log } : {}),
    ...(autocert ? { managed: autocert } : {}),
  });
  const store = generations.store;
  let listening: Listening;
  try {
    listening = await serve(store, { ...options, ...(autocert ? { acmeChallenges: autocert.challenges, ocsp: autocert.ocsp } : {}) });
  } catch (e) {
    autocert?.close();
    await generations.close();
    throw e;
  }
  let watcher: FSWatcher | undefined;
  const source = options.planPath ?? options.configPath;
  const watchedFiles = (p: PlanEnvelope) => [...new Set([...(source !== undefined ? [source] : []), ...p.inputs])];
  const reloader = createReloader({
    load: () => loadForRun(options),
    current: () => store.current.plan,
    prepare: (p) => generations.prepare(p),
    ...(options.log ? { log: options.log } : {}),
  });
  const reload = async (): Promise<ReloadResult> => {
    const r = await reloader.reload();
    // A new plan may refer to new files (a certificate added): watch them too.
    if (r.ok && r.result === 'swapped') {
      watcher?.add(watchedFiles(store.current.plan));
      autocert?.update(store.current.plan.body);
      options.onPlan?.(store.current.plan);
    }
    return r;
  };

  if (options.watch !== false) {
    watcher = watch(watchedFiles(plan), { ignoreInitial: true, awaitWriteFinish: { stabilityThreshold: 50, pollInterval: 10 } });
    let timer: NodeJS.Timeout | undefined;
    watcher.on('all', () => {
      clearTimeout(timer);
      timer = setTimeout(() => void reload(), 30);
    });
    await new Promise<void>((resolve) => watcher!.once('ready', () => resolve()));
  }

  return {
    store,
    listening,
    reload,
    lastReload: () => reloader.last(),
    autocert,
    close: async () => {
      autocert?.close();
      await watcher?.close();
      await listening.close();
      await generations.close();
    },
  };
}
