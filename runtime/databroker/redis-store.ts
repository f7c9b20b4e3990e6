/**
 * The Redis data broker (spec 2.6, docs/scale-out.md): sessions shared by every svc instance that
 * uses the same Redis (standalone, sentinel or cluster) and the same `shared_secret`.
 *
 * Semantics are the memory store's (test/runtime/databroker/store-contract.ts runs against both):
 * - a session's expiry is its key's TTL; `delete` replaces the record with the revocation mark `r`
 *   under the same key and TTL, so a revoked id is refused until the record would have expired,
 *   atomically with the check in `put` (one Lua script per operation, one key: cluster-safe);
 * - `consumeOnce` is `SET NX PX`: exactly one caller wins, across every instance;
 * - leases are `SET NX PX` and a compare-and-renew script.
 * At rest, every value is sealed (redis-seal.ts) and no key name holds a raw id (redis-keys.ts).
 *
 * Changes reach other instances through pub/sub on a dedicated connection; when that connection
 * comes back after a loss, every `onFlush` listener is told (caches start over), since changes may
 * have been missed meanwhile.
 *
 * INVARIANT (fail-closed): any Redis failure rejects with `SVC_ERR_SESSION_STORE_UNAVAILABLE` in
 * bounded time (no offline queue, command timeout: redis-options.ts); callers answer 503, never
 * "signed out". The outage and the recovery are logged once each; ioredis reconnects by itself.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { deriveKey } from '../authn/keys.ts';
import { GuardedSentinelConnector, GuardedStandaloneConnector } from './redis-connector.ts';
import { KeyLayout } from './redis-keys.ts';
import { redisTarget, secretsOf, type RedisTarget, type StorageSettings } from './redis-options.ts';
import { ValueSeal } from './redis-seal.ts';
import { ConnectionWaits, meteredClients } from './redis-waits.ts';
import { recordFromJson, recordJson } from './record-check.ts';
import { SessionStoreError, type SessionDirectory, type SessionRecord, type SessionStore, type StorageOperation, type StoreObserver, type StorePoolFigures } from './session-store.ts';

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /** The plan's `settings.databroker.storage` (type `redis`). */
  readonly storage: StorageSettings;
  /** `shared_secret` (or `cookie_secret` standing in), decoded: keys the seal and the key names. */
  readonly secret: Buffer;
  readonly observer?: StoreObserver;
  /** Told the outage and the recovery, once each (never the connection string or password). */
  readonly log?: (entry: Record<string, unknown>) => void;
}

type Client = Redis | Cluster;

/** The value that replaces a deleted session until its expiry. */
const REVOKED = 'r';

const PUT = `local v = redis.call('GET', KEYS[1])
if v == '${REVOKED}' then return -1 end
local ttl = tonumber(ARGV[2])
if ttl <= 0 then
  if v then redis.call('DEL', KEYS[1]) return 1 end
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
if v then return 1 end
return 0`;

const DELETE = `local v = redis.call('GET', KEYS[1])
if not v or v == '${REVOKED}' then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('SET', KEYS[1], '${REVOKED}', 'PX', ttl) else redis.call('DEL', KEYS[1]) end
return 1`;

const ACQUIRE = `local v = redis.call('GET', KEYS[1])
if not v then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
return 0`;

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0`;

interface Scripts {
  svcPut(key: string, value: Buffer, ttl: number): Promise<number>;
  svcDelete(key: string): Promise<number>;
  svcAcquire(key: string, holder: string, ttl: number): Promise<number>;
  svcRelease(key: string, holder: string): Promise<number>;
}

/** A {@link SessionStore} and {@link SessionDirectory} on Redis. */
export class RedisStore implements SessionStore, SessionDirectory {
  readonly #client: Client & Scripts;
  readonly #sub: Client;
  readonly #keys: KeyLayout;
  readonly #seal: ValueSeal;
  readonly #observer: StoreObserver | undefined;
  readonly #log: ((entry: Record<string, unknown>) => void) | undefined;
  readonly #secrets: string[];
  readonly #waits = new ConnectionWaits();
  /** Tags this instance's change messages, so it does not hear its own changes twice. */
  readonly #origin = randomBytes(9).toString('base64url');
  readonly #listeners = new Set<(id: string) => void>();
  readonly #flushListeners = new Set<() => void>();
  #inFlight = 0;
  /** Reachability as last logged: undefined before the first answer. */
  #up: boolean | undefined;
  #subscribed = false;
  #subLost = false;
  #closed = false;

  /** Connects in the background; never waits for Redis (svc starts while Redis is down). Throws `RedisConfigError`, `SecretError`, `TlsMaterialError`. */
  constructor(options: RedisStoreOptions) {
    const target = redisTarget(options.storage);
    this.#secrets = secretsOf(options.storage);
    this.#keys = new KeyLayout(deriveKey(options.secret, 'session store names'));
    this.#seal = new ValueSeal(deriveKey(options.secret, 'session store seal'));
    this.#observer = options.observer;
    this.#log = options.log;
    const clients = meteredClients(this.#waits);
    this.#client = connect(clients, target) as Client & Scripts;
    this.#client.defineCommand('svcPut', { numberOfKeys: 1, lua: PUT });
    this.#client.defineCommand('svcDelete', { numberOfKeys: 1, lua: DELETE });
    this.#client.defineCommand('svcAcquire', { numberOfKeys: 1, lua: ACQUIRE });
    this.#client.defineCommand('svcRelease', { numberOfKeys: 1, lua: RELEASE });
    this.#client.on('ready', () => this.#reachable(true));
    this.#client.on('error', (e: Error) => this.#reachable(false, e));
    this.#client.on('close', () => this.#reachable(false));
    // A subscriber keeps an offline queue: SUBSCRIBE waits for the connection, and ioredis
    // subscribes again after every reconnection.
    this.#sub = connect(clients, target, { subscriber: true });
    this.#sub.on('error', () => undefined);
    this.#sub.on('close', () => {
      if (this.#subscribed) this.#subLost = true;
    });
    this.#sub.on('ready', () => {
      if (!this.#subLost) return;
      this.#subLost = false;
      // Changes published while the channel was down were missed: every cache starts over.
      for (const f of this.#flushListeners) safely(f);
    });
    this.#sub.on('messageBuffer', (channel: Buffer, message: Buffer) => this.#message(channel.toString(), message));
    void this.#sub.subscribe(this.#keys.channel).then(
      () => void (this.#subscribed = true),
      () => undefined,
    );
  }

  /** Resolves once Redis answers (or rejects after `timeoutMs`); for tests and start-up messages. */
  async ready(timeoutMs = 10_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (!(this.#up === true && this.#subscribed)) {
      if (Date.now() > until) throw new SessionStoreError('SVC_ERR_SESSION_STORE_UNAVAILABLE', 'session store (redis) not reachable');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    return this.#op('get', async () => {
      const key = this.#keys.session(id);
      const value = await this.#client.getBuffer(key);
      if (value === null || isRevoked(value)) return undefined;
      const plain = this.#seal.open(key, value);
      const record = plain === undefined ? undefined : recordFromJson(plain.toString('utf8'), id);
      return record !== undefined && record.expiresAtMs > Date.now() ? record : undefined;
    });
  }

  async put(record: SessionRecord): Promise<void> {
    const json = recordJson(record);
    return this.#op('put', async () => {
      const key = this.#keys.session(record.id);
      const answer = await this.#client.svcPut(key, this.#seal.seal(key, Buffer.from(json)), record.expiresAtMs - Date.now());
      if (answer === -1) throw new SessionStoreError('SVC_ERR_SESSION_REVOKED', 'session was revoked');
      if (answer === 1) await this.#changed(record.id);
    });
  }

  async delete(id: string): Promise<void> {
    return this.#op('delete', async () => {
      if ((await this.#client.svcDelete(this.#keys.session(id))) === 1) await this.#changed(id);
    });
  }

  async isRevoked(id: string): Promise<boolean> {
    return this.#op('isRevoked', async () => {
      const value = await this.#client.getBuffer(this.#keys.session(id));
      return value !== null && isRevoked(value);
    });
  }

  async consumeOnce(key: string, expiresAtMs: number): Promise<boolean> {
    return this.#op('consumeOnce', async () => {
      const ttl = expiresAtMs - Date.now();
      // A mark that would already be forgotten is never stored (the memory store's answer too).
      if (ttl <= 0) return true;
      const name = this.#keys.once(key);
      return (await this.#client.set(name, this.#seal.seal(name, Buffer.alloc(0)), 'PX', ttl, 'NX')) === 'OK';
    });
  }

  async *sessionIds(): AsyncIterable<string> {
    this.#assertOpen();
    const started = performance.now();
    let result: 'ok' | 'error' = 'error';
    try {
      const nodes: Redis[] = this.#client instanceof Cluster ? this.#client.nodes('master') : [this.#client];
      for (const node of nodes) {
        let cursor = '0';
        do {
          const [next, keys] = await unavailableOnError(this.#secrets, 'sessionIds', () => node.scan(cursor, 'MATCH', this.#keys.sessionPattern, 'COUNT', 500));
          cursor = next;
          if (keys.length === 0) continue;
          const pipeline = node.pipeline();
          for (const k of keys) pipeline.getBuffer(k);
          const values = (await unavailableOnError(this.#secrets, 'sessionIds', () => pipeline.exec())) ?? [];
          for (let i = 0; i < keys.length; i++) {
            const [error, answer] = values[i] ?? [null, undefined];
            // A key of a slot being migrated (cluster resharding) is listed by the node importing
            // it, which redirects a plain GET: read it through the client, which follows MOVED/ASK.
            const value = error !== null && isRedirection(error) ? await unavailableOnError(this.#secrets, 'sessionIds', () => this.#client.getBuffer(keys[i]!)) : (answer as Buffer | null | undefined);
            if (!value || isRevoked(value)) continue;
            const plain = this.#seal.open(keys[i]!, value);
            if (plain === undefined) continue;
            const id = (JSON.parse(plain.toString('utf8')) as { id?: unknown }).id;
            if (typeof id === 'string') yield id;
          }
        } while (cursor !== '0');
      }
      result = 'ok';
    } finally {
      this.#observer?.operation('sessionIds', result, 'redis', performance.now() - started);
    }
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 1) throw new RangeError('ttlMs must be a positive integer');
    return this.#op('acquireLease', async () => (await this.#client.svcAcquire(this.#keys.lease(name), this.#keys.holder(holder), ttlMs)) === 1);
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    return this.#op('releaseLease', async () => void (await this.#client.svcRelease(this.#keys.lease(name), this.#keys.holder(holder))));
  }

  onChange(listener: (id: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  onFlush(listener: () => void): () => void {
    this.#flushListeners.add(listener);
    return () => this.#flushListeners.delete(listener);
  }

  /** Connection figures (spec §6 `redis_*`); the wait figures are redis-waits.ts's, for both connections. */
  poolFigures(): StorePoolFigures {
    const clients: Redis[] = [...(this.#client instanceof Cluster ? this.#client.nodes() : [this.#client]), ...(this.#sub instanceof Cluster ? this.#sub.nodes() : [this.#sub])];
    const conns = clients.filter((c) => c.status === 'ready').length;
    return { conns, idleConns: Math.max(0, conns - (this.#inFlight > 0 ? 1 : 0)), waitCount: this.#waits.count, waitDurationMs: this.#waits.durationMs, up: this.#up === true };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.clear();
    this.#flushListeners.clear();
    await Promise.all([this.#client, this.#sub].map((c) => quit(c)));
  }

  async #changed(id: string): Promise<void> {
    for (const l of this.#listeners) safely(() => l(id));
    const message = this.#seal.seal(this.#keys.channel, Buffer.from(JSON.stringify({ o: this.#origin, id })));
    // Best effort: a lost message is covered by the caches' short TTL and the flush on resubscribe.
    await this.#client.publish(this.#keys.channel, message).catch(() => undefined);
  }

  #message(channel: string, message: Buffer): void {
    if (channel !== this.#keys.channel) return;
    const plain = this.#seal.open(channel, message);
    if (plain === undefined) return;
    try {
      const m = JSON.parse(plain.toString('utf8')) as { o?: unknown; id?: unknown };
      if (m.o === this.#origin || typeof m.id !== 'string') return;
      for (const l of this.#listeners) safely(() => l(m.id as string));
    } catch {
      // Not ours: ignored.
    }
  }

  #reachable(up: boolean, error?: Error): void {
    if (this.#closed || this.#up === up) return;
    const first = this.#up === undefined;
    this.#up = up;
    if (up) this.#log?.({ msg: first ? 'session store (redis) connected' : 'session store (redis) reachable again' });
    else
      this.#log?.({
        msg: first ? 'session store (redis) unreachable at start; requests that need a session answer 503 until it is reachable' : 'session store (redis) unreachable; requests that need a session answer 503 until it is back',
        ...(error ? { error: redact(error.message, this.#secrets) } : {}),
      });
  }

  async #op<T>(operation: StorageOperation, body: () => Promise<T>): Promise<T> {
    this.#assertOpen();
    const started = performance.now();
    this.#inFlight++;
    let result: 'ok' | 'error' = 'error';
    try {
      const value = await unavailableOnError(this.#secrets, operation, body);
      result = 'ok';
      return value;
    } finally {
      this.#inFlight--;
      this.#observer?.operation(operation, result, 'redis', performance.now() - started);
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new SessionStoreError('SVC_ERR_SESSION_STORE_CLOSED', 'session store is closed');
  }
}

function connect(clients: ReturnType<typeof meteredClients>, target: RedisTarget, extra: { subscriber?: boolean } = {}): Client {
  const sub = extra.subscriber === true;
  // The subscriber queues its SUBSCRIBE until connected (and re-subscribes after reconnects).
  const forSub = (o: RedisOptions): RedisOptions => {
    if (!sub) return o;
    const { commandTimeout: _t, ...rest } = o;
    return { ...rest, enableOfflineQueue: true, maxRetriesPerRequest: null };
  };
  if (target.kind === 'cluster') {
    const nodeOptions = { ...forSub(target.options.redisOptions ?? {}), Connector: GuardedStandaloneConnector };
    return new clients.Cluster(target.nodes, { ...target.options, ...(sub ? { enableOfflineQueue: true } : {}), redisOptions: nodeOptions });
  }
  const Connector = target.options.sentinels !== undefined ? GuardedSentinelConnector : GuardedStandaloneConnector;
  return new clients.Redis({ ...forSub(target.options), Connector });
}

/** A cluster's MOVED or ASK answer. */
function isRedirection(error: Error): boolean {
  return /^(MOVED|ASK) /.test(error.message);
}

function isRevoked(value: Buffer): boolean {
  return value.length === 1 && value[0] === REVOKED.charCodeAt(0);
}

function safely(f: () => void): void {
  try {
    f();
  } catch {
    // A listener's failure must not undo or block the store's change.
  }
}

async function quit(c: Client): Promise<void> {
  try {
    await Promise.race([c.quit(), new Promise((r) => setTimeout(r, 1_000).unref())]);
  } catch {
    // Not connected: nothing to say goodbye to.
  }
  c.disconnect();
}

/** `text` with every secret replaced by `***`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join('***');
  return out;
}

/** Runs `body`; a Redis failure becomes `SVC_ERR_SESSION_STORE_UNAVAILABLE` (a store error passes through). */
async function unavailableOnError<T>(secrets: readonly string[], operation: string, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (e) {
    if (e instanceof SessionStoreError) throw e;
    throw new SessionStoreError('SVC_ERR_SESSION_STORE_UNAVAILABLE', `session store (redis) ${operation} failed: ${redact((e as Error).message, secrets)}`);
  }
}
