/**
 * ioredis's connectors with one addition: every socket they open keeps an `error` listener for
 * its whole life.
 *
 * CONTRACT: ioredis listens for a socket's errors with `once`, so a socket that fails twice
 * (seen with TLS: a write fails, then the server's alert is read, e.g. from a server that wants
 * a client certificate) would throw its second error as an uncaught exception and end svc. The
 * first error still reaches ioredis, which reports it and reconnects as before; later ones are
 * dropped here because that socket is already being replaced.
 */
import { createRequire } from 'node:module';
import { SentinelConnector, type RedisOptions } from 'ioredis';
import type StandaloneConnectorModule from 'ioredis/built/connectors/StandaloneConnector.js';
import type { ErrorEmitter } from 'ioredis/built/connectors/AbstractConnector.js';
import type { NetStream } from 'ioredis/built/types.js';

// ioredis exports its sentinel connector but not its standalone one, a CommonJS module.
const StandaloneConnector = (createRequire(import.meta.url)('ioredis/built/connectors/StandaloneConnector.js') as typeof StandaloneConnectorModule).default;

function keepListening(stream: NetStream): NetStream {
  stream.on('error', ignoreLaterErrors);
  return stream;
}

function ignoreLaterErrors(): void {
  // See the contract above: ioredis has already seen the socket's first error.
}

/** What ioredis's `Connector` option takes. */
type Connector = NonNullable<RedisOptions['Connector']>;

/** Connects to a standalone Redis (`redis://`, `rediss://`) and for every node of a cluster. */
class GuardedStandalone extends StandaloneConnector {
  override async connect(emit: ErrorEmitter): Promise<NetStream> {
    return keepListening(await super.connect(emit));
  }
}

/** Connects to a master found through sentinels (`redis+sentinel://`, `rediss+sentinel://`). */
class GuardedSentinel extends SentinelConnector {
  override async connect(emit: ErrorEmitter): Promise<NetStream> {
    return keepListening(await super.connect(emit));
  }
}

// The classes take exactly the options ioredis hands its own connectors.
export const GuardedStandaloneConnector = GuardedStandalone as Connector;
export const GuardedSentinelConnector = GuardedSentinel as Connector;
