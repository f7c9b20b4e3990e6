/**
 * What a listener is serving right now, for the graceful stop (runtime/proxy/listeners.ts `drain`): the
 * requests in flight and the open tunnels (CONNECT and upgrades). Once `draining`, new requests on
 * connections still open are answered with `Connection: close`; once `cutting` (the drain deadline
 * passed), what is still running is cut and its access line says `cutBy: shutdown`.
 */
import type { Duplex } from 'node:stream';

export class InFlight {
  requests = 0;
  readonly tunnels = new Set<Duplex>();
  draining = false;
  cutting = false;
  #idle: (() => void)[] = [];

  begin(): void {
    this.requests++;
  }

  end(): void {
    this.requests--;
    if (this.requests === 0) for (const f of this.#idle.splice(0)) f();
  }

  /** Holds a tunnel's client stream until it closes (closed by the stop after the requests). */
  tunnel(stream: Duplex): void {
    this.tunnels.add(stream);
    stream.once('close', () => this.tunnels.delete(stream));
  }

  /** Resolves once no request is in flight. */
  idle(): Promise<void> {
    return this.requests === 0 ? Promise.resolve() : new Promise((resolve) => this.#idle.push(resolve));
  }
}
