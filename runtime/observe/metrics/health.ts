/**
 * Liveness and readiness (`/healthz`, `/readyz`) for load balancers and orchestrators, served on the
 * metrics listener (listener.ts); the main listener answers `/.svc/ping` and `/.svc/ready` the same
 * way (runtime/proxy/probes.ts). docs/observability.md, "Health endpoints".
 * - live: the process answers HTTP (its event loop runs), draining or not. Its answer also reports
 *   the data broker's state (`databroker: reachable`), read from what is known already: a liveness
 *   probe never waits on a dependency.
 * - ready: a plan is in service and svc is not draining (with `--workers`, a worker serves). Never a
 *   dependency every replica shares (the data broker, Redis): were it down, every replica would turn
 *   unready at once and an orchestrator would pull the public routes svc still serves
 *   (docs/scale-out.md, "Failure behaviour"). Its state goes to `/healthz`, the metrics
 *   (`svc_redis_up`) and the logs instead.
 * The answers are `ok`, the names of failed checks and of the data broker's state; they reveal no
 * secret, address, route or plan content, which is why they are served without the metrics
 * credential (an orchestrator's probe carries none). They still pass the listener's TLS and
 * client-certificate checks.
 */
import type { SessionStore, StorePoolFigures } from '../../core/session-store.ts';

/** One readiness check: resolves true when satisfied. */
export type ReadinessCheck = () => boolean | Promise<boolean>;

/** The readiness checks svc runs, by name (`plan`, `draining`, `listeners`). */
export type ReadinessChecks = Readonly<Record<string, ReadinessCheck>>;

/** What `/healthz` reports besides `ok`, by name (`databroker`): read at once, never awaited. */
export type HealthDetail = Readonly<Record<string, () => string>>;

/** How long the data broker may take to answer a probe. */
const DATABROKER_PROBE_TIMEOUT_MS = 2_000;

/** How often the data broker is probed when its state is not known otherwise (a data broker service). */
const DATABROKER_PROBE_INTERVAL_MS = 5_000;

/** A check that the store answers a read (of an id no session can have) in time. */
function storeAnswers(store: () => SessionStore | undefined): ReadinessCheck {
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

/** The data broker as `/healthz` reports it. */
export type DatabrokerState = 'reachable' | 'unreachable' | 'unknown';

export interface DatabrokerWatch {
  /** The last known state, at once. */
  state(): DatabrokerState;
  close(): void;
}

/**
 * Follows the data broker's state for `/healthz`. A store with a Redis pool knows it (its
 * connection events; the Redis store logs each change itself); otherwise (the memory store, a data
 * broker service over gRPC) the store is probed every `intervalMs` in the background and a change is
 * logged (`data broker unreachable` / `data broker reachable again`).
 */
export function watchDatabroker(options: {
  readonly store: () => SessionStore | undefined;
  readonly pool?: () => StorePoolFigures | undefined;
  readonly log?: (entry: Record<string, unknown>) => void;
  readonly intervalMs?: number;
}): DatabrokerWatch {
  let probed: DatabrokerState = 'unknown';
  let closed = false;
  let running = false;
  const answers = storeAnswers(options.store);
  const probe = () => {
    if (running || closed || options.pool?.() !== undefined) return;
    running = true;
    void Promise.resolve(answers()).then((ok) => {
      running = false;
      if (closed) return;
      const next: DatabrokerState = ok ? 'reachable' : 'unreachable';
      if (next !== probed) {
        if (next === 'unreachable') options.log?.({ level: 'warn', msg: 'data broker unreachable; requests that need a session answer 503 until it is back (readiness does not change)' });
        else if (probed === 'unreachable') options.log?.({ msg: 'data broker reachable again' });
      }
      probed = next;
    });
  };
  probe();
  const timer = setInterval(probe, options.intervalMs ?? DATABROKER_PROBE_INTERVAL_MS);
  timer.unref();
  return {
    state: () => {
      const pool = options.pool?.();
      if (pool !== undefined) return pool.up ? 'reachable' : 'unreachable';
      return probed;
    },
    close: () => {
      closed = true;
      clearInterval(timer);
    },
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

/** The body of `/healthz`: `ok`, then one `name: state` line per detail (one that throws: `unknown`). */
export function healthBody(detail: HealthDetail | undefined): string {
  let body = 'ok\n';
  for (const [name, read] of Object.entries(detail ?? {})) {
    let value: string;
    try {
      value = read();
    } catch {
      value = 'unknown';
    }
    body += `${name}: ${value}\n`;
  }
  return body;
}
