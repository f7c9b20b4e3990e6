/**
 * The autocert wiring of `svc run` (runtime/run/run.ts): the process's manager for a plan with
 * `autocert: true`, or null. What the listener needs from it: `challenges` (TLS-ALPN-01 on the
 * HTTPS listener, HTTP-01 on the redirect listener, runtime/run/serve.ts), and the manager itself
 * as the managed-certificate source of each generation's certificate store.
 */
import type { PlanBody } from '../../../compiler/plan/types.ts';
import { AutocertManager, type AutocertOptions } from './manager.ts';

export function startAutocert(body: PlanBody, options: Omit<AutocertOptions, 'http01'> = {}): AutocertManager | null {
  const a = body.settings.autocert;
  if (!a.enabled || body.settings.server.insecure) return null;
  const manager = new AutocertManager(a, { ...options, http01: body.settings.server.httpRedirectAddress !== null });
  manager.update(body);
  options.log?.({ level: 'info', msg: 'autocert: managing certificates', names: manager.names, dir: a.dir });
  return manager;
}
