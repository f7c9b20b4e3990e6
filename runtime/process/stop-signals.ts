/**
 * How `svc run` stops (docs/logging.md, "Stopping"): the first SIGTERM or SIGINT starts a graceful
 * stop (`stop`: readiness turns 503 `draining`, connections are still accepted for the shutdown
 * delay, then the requests in flight drain, tunnels close, logs and spans are flushed), after which
 * the process exits 0; a second signal during it exits at once (`now`: flush the logs, exit 1).
 * A cluster worker is also asked to stop (or to exit at once) by its primary over IPC.
 *
 * SIGHUP reloads the configuration (docs/running.md, "Reload"), as every daemon convention and
 * systemd's `ExecReload` expect: never a stop, and never counted as one of the stop signals.
 */

/** The drain timeout when `--drain-timeout` is not given: under the 30 s orchestrators commonly allow. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 25_000;

/**
 * How long svc keeps accepting connections after the first stop signal, with readiness already
 * failing, before the drain starts (`--shutdown-delay`; 0 turns it off): time for a load balancer
 * or an orchestrator's endpoints to notice, as Traefik's `requestAcceptGraceTimeout`. Counted before
 * the drain timeout.
 */
export const DEFAULT_SHUTDOWN_DELAY_MS = 5_000;

/**
 * Waits the shutdown delay (at once for 0). A second signal still exits during it (`now`). The
 * timer holds no process open by itself: the listeners accepting during the delay do.
 */
export function shutdownDelay(ms: number): Promise<void> {
  return ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * Makes SIGHUP call `onHangup` for the life of the process, instead of Node's default (exit 129).
 * Installed as early as possible: a SIGHUP before svc serves must not kill it either. Returns a
 * function replacing what a SIGHUP does from then on.
 */
export function onReloadSignal(onHangup: () => void): (next: () => void) => void {
  let current = onHangup;
  process.on('SIGHUP', () => current());
  return (next) => {
    current = next;
  };
}

export interface Stopper {
  /** Starts the graceful stop, once (what the first signal does; the cluster primary's request too). */
  stop(): void;
  /** Stops at once (what a second signal does). */
  now(): void;
}

export function onStopSignals(graceful: () => Promise<void>, immediate: () => void, exit: (code: number) => void = (c) => process.exit(c)): Stopper {
  let stopping = false;
  const now = () => {
    immediate();
    exit(1);
  };
  const stop = () => {
    if (stopping) return;
    stopping = true;
    graceful().then(
      () => exit(0),
      () => exit(1),
    );
  };
  // The second signal this process receives stops at once. Counted, not read from `stopping`: a
  // cluster worker may be asked to stop over IPC a moment before a Ctrl-C's own SIGINT reaches it.
  let signals = 0;
  const onSignal = () => (++signals >= 2 ? now() : stop());
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return { stop, now };
}
