/**
 * The autocert wiring of `svc run` (runtime/process/run.ts): the process's manager for a plan with
 * `autocert: true`, or null. What the listener needs from it: `challenges` (TLS-ALPN-01 on the
 * HTTPS listener, HTTP-01 on the redirect listener, runtime/proxy/listeners.ts), and the manager itself
 * as the managed-certificate source of each generation's certificate store.
 *
 * The manager, its ACME client (acme-client) and OCSP stapler are imported only for a plan with
 * autocert (docs/architecture.md §5 "Lazy feature loading"); one that cannot be loaded refuses the
 * plan at start (`FeatureUnavailableError`).
 */
import type { PlanBody } from '../../../compiler/plan/types.ts';
import { loadFeature } from '../../core/load-feature.ts';
import type { AutocertManager, AutocertOptions } from './manager.ts';

export async function startAutocert(body: PlanBody, options: Omit<AutocertOptions, 'http01'> = {}): Promise<AutocertManager | null> {
  const a = body.settings.autocert;
  if (!a.enabled || body.settings.server.insecure) return null;
  const { AutocertManager } = await loadFeature('autocert', () => import('./manager.ts'));
  const manager = new AutocertManager(a, { ...options, http01: body.settings.server.httpRedirectAddress !== null });
  // Said by the first generation's `autocertNames` part (runtime/generation/generation.ts), under the plan's log settings.
  manager.update(body);
  return manager;
}

/**
 * Why a new plan cannot be applied by the running autocert manager, or undefined when it can. The
 * manager (its CA, account, directory, must-staple choice, and whether there is one at all) is made
 * from the first plan; a reload may change which names it manages, but one that changes an
 * `autocert*` setting is refused with "restart required", never half applied.
 */
export function autocertChange(a: PlanBody['settings'], b: PlanBody['settings']): string | undefined {
  const on = (s: PlanBody['settings']) => s.autocert.enabled && !s.server.insecure;
  if (on(a) !== on(b)) return `autocert was turned ${on(b) ? 'on' : 'off'}: restart svc to apply it`;
  if (on(a) && JSON.stringify(a.autocert) !== JSON.stringify(b.autocert)) return 'the autocert settings changed (autocert_ca, autocert_dir, autocert_email, autocert_must_staple, autocert_use_staging, autocert_eab_*, autocert_trusted_ca): restart svc to apply them';
  return undefined;
}
