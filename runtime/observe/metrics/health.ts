/**
 * Liveness and readiness (`/healthz`, `/readyz`) for load balancers and orchestrators, served on the
 * metrics listener (listener.ts):
 * - live: the process answers HTTP (its event loop runs);
 * - ready: a plan is in service, svc's listeners are up, and the data broker answers (a cheap read
 *   of a session id that never exists, bounded by a timeout).
 * The answers are `ok` or the name of the failed check; they reveal no secret, address, route or
 * plan content, which is why they are served without the metrics credential (an orchestrator's
 * probe carries none). They still pass the listener's TLS and client-certificate checks.
 */
import type { SessionStore } from '../../databroker/session-store.ts';

/** One readiness check: resolves true when satisfied. */
export type ReadinessCheck = () => boolean | Promise<boolean>;

/** The readiness checks svc runs, by name (`plan`, `listeners`, `databroker`). */
export type ReadinessChecks = Readonly<Record<string, ReadinessCheck>>;

/** How long the data broker may take to answer a readiness probe. */
export const DATABROKER_PROBE_TIMEOUT_MS = 2_000;

/** A readiness check that the store answers a read (of an id no session can have) in time. */
export function storeAnswers(store: () => SessionStore | undefined): ReadinessCheck {
  return async () => {
    const s = store();
    if (!s) return false;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        s.get('svc-readiness-probe').then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), DATABROKER_PROBE_TIMEOUT_MS);
        }),
      ]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  };
}

/** Runs every check; the names of those that failed (empty: ready). A check that throws failed. */
export async function failedChecks(checks: ReadinessChecks): Promise<string[]> {
  const results = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      try {
        return (await check()) ? undefined : name;
      } catch {
        return name;
      }
    }),
  );
  return results.filter((n): n is string => n !== undefined);
}
