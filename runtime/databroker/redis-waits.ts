/**
 * The wait figures (docs/observability.md "Metric reference") (`redis_wait_count_total`, `redis_wait_duration_ms_total`: commands
 * that waited for a connection, and how long). ioredis keeps one connection per server (per node on
 * a cluster) and no pool, so "waiting for a connection" means: the command was issued while its
 * client was not `ready` (not yet connected, reconnecting, or finding a new master or slot map).
 *
 * CONTRACT: a wait starts when such a command is issued and ends when the client becomes `ready`
 * or when the command settles (answered, failed, timed out or flushed), whichever comes first. svc
 * turns the offline queue off on its command connection (fail-closed, redis-options.ts), so there
 * a command issued during an outage fails at once: it is counted, with a wait of about 0 ms. Real
 * waits are those ioredis does queue: the pub/sub connection's subscription, and a cluster client's
 * subscriber. A cluster is measured as a whole (the `Cluster` object's status), not node by node.
 *
 * Hand-written: ioredis has no hook for this. The clients below override `sendCommand`, the one
 * method every command goes through, with one status comparison on the hot path.
 */
import type { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { Cluster, Command, Redis } from 'ioredis';
import type { WriteableStream } from 'ioredis/built/types.js';

/** Counts the commands that waited for a connection and the time they waited. */
export class ConnectionWaits {
  #count = 0;
  #durationMs = 0;
  /** Per client: the ends of the waits in progress. */
  readonly #pending = new WeakMap<EventEmitter, Set<() => void>>();

  /** Commands that waited, since start. */
  get count(): number {
    return this.#count;
  }

  /** Total time they waited, in ms, since start (waits in progress are added when they end). */
  get durationMs(): number {
    return this.#durationMs;
  }

  /** Records a command issued while `client` was not ready; `settled` is the command's promise. */
  waiting(client: EventEmitter, settled: Promise<unknown>): void {
    this.#count++;
    const started = performance.now();
    let pending = this.#pending.get(client);
    if (pending === undefined) {
      const waits = new Set<() => void>();
      // One listener per client, however many commands wait (no listener leak during an outage).
      client.on('ready', () => {
        for (const end of [...waits]) end();
      });
      this.#pending.set(client, waits);
      pending = waits;
    }
    const waits = pending;
    const end = (): void => {
      if (waits.delete(end)) this.#durationMs += performance.now() - started;
    };
    waits.add(end);
    // Both branches: the command's own caller handles its rejection.
    settled.then(end, end);
  }
}

/**
 * Marks a command's rejection as handled. ioredis sends some commands of its own without a handler
 * (SELECT and SUBSCRIBE again once a reconnection is ready): a connection closed at that moment (svc
 * stopping as Redis returns) rejected them as an unhandled rejection, which ends a Node process.
 * Every caller of svc's own commands still gets the rejection: this adds a handler, it takes none away.
 */
function handled(command: Command): void {
  command.promise.catch(() => undefined);
}

/** The client classes to connect with: ioredis's, reporting their waits to `waits`. */
export function meteredClients(waits: ConnectionWaits): { readonly Redis: typeof Redis; readonly Cluster: typeof Cluster } {
  class MeteredRedis extends Redis {
    override sendCommand(command: Command, stream?: WriteableStream): unknown {
      handled(command);
      // While connecting, ioredis itself sends its handshake (AUTH, SELECT, INFO…): not a wait.
      if (this.status !== 'ready' && !(this.status === 'connect' && Command.checkFlag('HANDSHAKE_COMMANDS', command.name))) waits.waiting(this, command.promise);
      return super.sendCommand(command, stream);
    }
  }
  class MeteredCluster extends Cluster {
    override sendCommand(command: Command, stream?: WriteableStream, node?: unknown): unknown {
      handled(command);
      // CLUSTER commands are the client's own start-up and slot checks: not a wait.
      if (this.status !== 'ready' && command.name !== 'cluster') waits.waiting(this, command.promise);
      return super.sendCommand(command, stream, node);
    }
  }
  return { Redis: MeteredRedis, Cluster: MeteredCluster };
}
