/**
 * How `svc run` stops (docs/logging.md, "Stopping"): the first SIGTERM or SIGINT starts a graceful
 * stop (`stop`: drain the requests in flight, close tunnels, flush logs and spans), after which the
 * process exits 0; a second signal during it exits at once (`now`: flush the logs, exit 1).
 * A cluster worker is also asked to stop (or to exit at once) by its primary over IPC.
 */

/** The drain timeout when `--drain-timeout` is not given: under the 30 s orchestrators commonly allow. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 25_000;

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
