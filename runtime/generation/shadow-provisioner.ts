/**
 * The shadow part of a generation (docs/running.md "Shadow plans"): the candidate plan of
 * `svc run --shadow`, whose route matching and policy programs decide every request a second time
 * (runtime/request/shadow.ts) while only the enforced plan's decision acts.
 *
 * Loaded with every generation: at start, and on every reload (SIGHUP, the file watcher), a renewal
 * included, so changing only the candidate's file is picked up. A candidate that fails never takes
 * the enforced plan down: this provisioner never throws. It logs the failure with its code
 * (`SVC_ERR_SHADOW_INVALID`, `SVC_ERR_SHADOW_SETTINGS`), sets `svc_shadow_last_load_success` to 0,
 * and keeps the last good candidate, or none when that one no longer fits the enforced plan.
 *
 * What a candidate may differ in: its routes (and so their policies, matchers, upstreams). Its
 * settings must equal the enforced plan's: listeners, certificates, cookies, the identity provider
 * and `xff_num_trusted_hops` either need a restart or take part in the decision itself, and a
 * candidate comparing decisions under other settings would report differences nobody will see. A
 * candidate whose settings differ is refused, naming the first setting that differs and where the
 * candidate set it (never its value: settings hold secrets).
 */
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { SvcError } from '../core/errors.ts';
import { buildIndex } from '../plan/index.ts';
import type { ShadowChange, ShadowPlan } from '../request/shadow.ts';
import type { ShadowObserver } from '../observe/metrics/shadow.ts';
import { RateLimitedLog } from '../grpc/rate-limited-log.ts';
import type { Provisioner } from './provision.ts';

/** Where the candidate plan comes from. */
export interface ShadowSource {
  /** The candidate's file, as logs name it. */
  readonly name: string;
  /**
   * Loads the candidate (a plan file checked like any plan, or a config compiled; on a cluster
   * worker, the text the primary sent). Null: no candidate now. Throws a coded error to fail.
   */
  load(): PlanEnvelope | null | Promise<PlanEnvelope | null>;
}

/** The error of a candidate that cannot be used; the enforced plan is not affected. */
export class ShadowError extends SvcError<'SVC_ERR_SHADOW_INVALID' | 'SVC_ERR_SHADOW_SETTINGS' | 'SVC_ERR_SHADOW_UNSUPPORTED_ROLE'> {
  constructor(code: 'SVC_ERR_SHADOW_INVALID' | 'SVC_ERR_SHADOW_SETTINGS' | 'SVC_ERR_SHADOW_UNSUPPORTED_ROLE', message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = 'ShadowError';
  }
}

/** The shadow provisioner: none without `source`. */
export function shadowProvisioner(source: ShadowSource | undefined, observer: ShadowObserver | undefined, log: ((entry: Record<string, unknown>) => void) | undefined): Provisioner<ShadowPlan | null> {
  const failures = new RateLimitedLog(log);
  const differed = observer ? (route: string, change: ShadowChange) => observer.differed(route, change) : () => undefined;
  const failed = (e: unknown) => {
    observer?.failed();
    failures.log('shadow-decision', { level: 'error', msg: 'shadow decision failed; the request was served by the enforced plan (logged at most once a minute)', code: 'SVC_ERR_SHADOW_DECISION', error: (e as Error)?.message ?? String(e) });
  };
  return {
    name: 'shadow',
    provision: async (plan, _index, previous) => {
      if (source === undefined) return null;
      try {
        const candidate = await source.load();
        if (candidate === null) return null;
        const differs = settingsDifference(plan, candidate, source.name);
        if (differs !== undefined) throw new ShadowError('SVC_ERR_SHADOW_SETTINGS', differs);
        observer?.attempted(true);
        // The same candidate: the part in service stays (a renewal that finds nothing new swaps nothing).
        if (previous && previous.checksum === candidate.checksum) return previous;
        log?.({ msg: 'shadow plan loaded', shadow: source.name, checksum: candidate.checksum, routes: candidate.body.routes.length, enforced: plan.checksum });
        return { index: buildIndex(candidate.body), checksum: candidate.checksum, differed, failed };
      } catch (e) {
        observer?.attempted(false);
        // The last good candidate stays while it still fits the enforced plan (same settings).
        const kept = previous && firstDifference(plan.body.settings, previous.index.body.settings, 'settings') === undefined ? previous : null;
        const code = (e as { code?: unknown }).code;
        log?.({
          level: 'error',
          msg: kept ? 'shadow plan not loaded; keeping the last good shadow plan' : 'shadow plan not loaded; no shadow plan in service',
          code: typeof code === 'string' && code.startsWith('SVC_ERR_SHADOW_') ? code : 'SVC_ERR_SHADOW_INVALID',
          ...(typeof code === 'string' && !code.startsWith('SVC_ERR_SHADOW_') ? { cause: code } : {}),
          shadow: source.name,
          error: (e as Error)?.message ?? String(e),
          ...(kept ? { checksum: kept.checksum } : {}),
        });
        return kept;
      }
    },
    cleanup: () => undefined,
    afterSwap: (part) => observer?.inService(part?.checksum ?? null),
  };
}

/**
 * Why `candidate` cannot shadow `enforced`: the first setting that differs (a plan body path), and
 * where the candidate set it when its source map says; undefined when the settings are equal.
 */
export function settingsDifference(enforced: Pick<PlanEnvelope, 'body'>, candidate: Pick<PlanEnvelope, 'body' | 'sourceMap'>, name: string): string | undefined {
  const path = firstDifference(enforced.body.settings, candidate.body.settings, 'settings');
  if (path === undefined) return undefined;
  const at = locate(candidate.sourceMap.settings, path);
  return `${at ?? name}: shadow plan setting \`${path}\` differs from the enforced plan's: a shadow plan may differ in its routes and policies only (listeners, certificates, cookies, the identity provider and the other settings stay the enforced plan's); make the setting equal, or restart svc with the new settings`;
}

/** The path of the first place `a` and `b` differ (JSON values), or undefined when equal. */
function firstDifference(a: unknown, b: unknown, path: string): string | undefined {
  if (a === b) return undefined;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return path;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return path;
    for (let i = 0; i < a.length; i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  for (const key of new Set([...Object.keys(x), ...Object.keys(y)])) {
    const d = firstDifference(x[key], y[key], `${path}.${key}`);
    if (d !== undefined) return d;
  }
  return undefined;
}

/**
 * Where the candidate's config set the setting at `path` (`file:line:col`), when its source map
 * names a config key spelled like the path's last names (`settings.cookie.secret` → `cookie_secret`
 * or `secret`).
 */
function locate(where: Readonly<Record<string, string>>, path: string): string | undefined {
  const names = path
    .replace(/\[\d+\]/g, '')
    .split('.')
    .slice(1)
    .map((n) => n.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));
  for (let i = names.length - 1; i >= 0; i--) {
    const last = names[i]!;
    const parent = names[i - 1];
    for (const key of [parent !== undefined ? `${parent}_${last}` : undefined, last]) if (key !== undefined && Object.hasOwn(where, key)) return where[key];
  }
  return undefined;
}
