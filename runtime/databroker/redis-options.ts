/**
 * From the plan's storage settings to ioredis options: every URL shape of docs/scale-out.md "Connection strings" (standalone,
 * sentinel, cluster, each plain or TLS), with `databroker_storage_ca_file`, `_cert_file`,
 * `_key_file` and `_tls_skip_verify`, and the URL parameters `dial_timeout` and `read_timeout`.
 *
 * Fail-closed choices (docs/scale-out.md): no offline queue (a command while Redis is away fails at
 * once, so a request answers 503 instead of waiting), one retry per command at most, a bounded
 * command time, and reconnection forever in the background with capped back-off.
 */
import type { ClusterOptions, RedisOptions } from 'ioredis';
import type { ConnectionOptions } from 'node:tls';
import { durationMs, parseRedisUrl, type ParsedRedisUrl } from '../../compiler/plan/redis-url.ts';
import type { PlanSettings } from '../../compiler/plan/types.ts';
import { SvcError } from '../core/errors.ts';
import { readPemSource } from '../tls/pem.ts';
import { resolvePem, resolveSecretText } from '../plan/secrets.ts';

export type StorageSettings = PlanSettings['databroker']['storage'];

/** How to reach Redis: one of three client shapes. */
export type RedisTarget =
  | { readonly kind: 'redis'; readonly options: RedisOptions }
  | { readonly kind: 'sentinel'; readonly options: RedisOptions }
  | { readonly kind: 'cluster'; readonly nodes: { host: string; port: number }[]; readonly options: ClusterOptions };

/** A storage configuration svc cannot use. The message never holds the connection string or a password. */
export class RedisConfigError extends SvcError<'SVC_ERR_REDIS_CONFIG'> {
  constructor(message: string) {
    super('SVC_ERR_REDIS_CONFIG', message);
    this.name = 'RedisConfigError';
  }
}

const DEFAULT_DIAL_MS = 2_000;
const DEFAULT_COMMAND_MS = 2_000;
/** Longest pause between reconnection attempts. */
const MAX_BACKOFF_MS = 2_000;

/** Capped back-off; never gives up (svc heals when Redis returns). */
export function reconnectDelayMs(attempt: number): number {
  return Math.min(50 * 2 ** Math.min(attempt, 10), MAX_BACKOFF_MS);
}

/** The parsed connection string of `storage` (the secret is resolved here, never logged). */
function parsedConnection(storage: StorageSettings): ParsedRedisUrl {
  if (storage.connectionString === null) throw new RedisConfigError('databroker_storage_connection_string is not set');
  const parsed = parseRedisUrl(resolveSecretText(storage.connectionString, 'databroker_storage_connection_string'));
  // The compiler checked it; a plan edited by hand gets the problem without the URL.
  if (typeof parsed === 'string') throw new RedisConfigError(`databroker_storage_connection_string is not a valid redis URL: ${parsed}`);
  return parsed;
}

/** The TLS options of the URL's `rediss` forms (undefined for plain connections). */
function tlsOptions(storage: StorageSettings, url: ParsedRedisUrl, servername: string | undefined): ConnectionOptions | undefined {
  if (!url.tls) return undefined;
  return {
    ...(storage.caFile ? { ca: readPemSource(storage.caFile, 'databroker_storage_ca_file') } : {}),
    ...(storage.certFile ? { cert: readPemSource(storage.certFile, 'databroker_storage_cert_file') } : {}),
    ...(storage.keyFile ? { key: resolvePem(storage.keyFile, 'databroker_storage_key_file') } : {}),
    ...(servername !== undefined && !/^[\d.]+$|:/.test(servername) ? { servername } : {}),
    rejectUnauthorized: !storage.tlsSkipVerify,
  };
}

/** The ioredis options for `storage`. Throws `RedisConfigError`, `SecretError` or `TlsMaterialError`. */
export function redisTarget(storage: StorageSettings): RedisTarget {
  const url = parsedConnection(storage);
  const dial = url.params['dial_timeout'] !== undefined ? durationMs(url.params['dial_timeout']) ?? DEFAULT_DIAL_MS : DEFAULT_DIAL_MS;
  const command = url.params['read_timeout'] !== undefined ? durationMs(url.params['read_timeout']) ?? DEFAULT_COMMAND_MS : DEFAULT_COMMAND_MS;
  const credentials = { ...(url.username !== null ? { username: url.username } : {}), ...(url.password !== null ? { password: url.password } : {}) };
  const common: RedisOptions = {
    ...credentials,
    connectTimeout: dial,
    commandTimeout: command,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: reconnectDelayMs,
    // A READONLY reply (a demoted master after failover) reconnects to find the new master.
    reconnectOnError: (e) => (/^READONLY|^LOADING/.test(e.message) ? 2 : false),
    lazyConnect: false,
  };
  const first = url.hosts[0]!;
  if (url.kind === 'redis') {
    const tls = tlsOptions(storage, url, first.host);
    return { kind: 'redis', options: { ...common, host: first.host, port: first.port, db: url.db, ...(tls ? { tls } : {}) } };
  }
  if (url.kind === 'sentinel') {
    const tls = tlsOptions(storage, url, undefined);
    return {
      kind: 'sentinel',
      options: {
        ...common,
        db: url.db,
        name: url.master!,
        sentinels: url.hosts.map((h) => ({ host: h.host, port: h.port })),
        // The URL's credentials open the sentinels and the master alike.
        ...(url.username !== null ? { sentinelUsername: url.username } : {}),
        ...(url.password !== null ? { sentinelPassword: url.password } : {}),
        sentinelRetryStrategy: reconnectDelayMs,
        sentinelMaxConnections: 4,
        ...(tls ? { tls, sentinelTLS: tls, enableTLSForSentinelMode: true } : {}),
      },
    };
  }
  const tls = tlsOptions(storage, url, undefined);
  return {
    kind: 'cluster',
    nodes: url.hosts.map((h) => ({ host: h.host, port: h.port })),
    options: {
      enableOfflineQueue: false,
      clusterRetryStrategy: reconnectDelayMs,
      slotsRefreshTimeout: dial,
      // MOVED/ASK are followed by ioredis; a few redirections per command at most.
      maxRedirections: 16,
      retryDelayOnFailover: 100,
      retryDelayOnClusterDown: 100,
      redisOptions: { ...common, ...(tls ? { tls } : {}) },
    },
  };
}

/** Every secret text of `storage` a message must never show (the connection string, its password). */
export function secretsOf(storage: StorageSettings): string[] {
  try {
    if (storage.connectionString === null) return [];
    const text = resolveSecretText(storage.connectionString, 'databroker_storage_connection_string');
    const parsed = parseRedisUrl(text);
    const out = [text];
    if (typeof parsed !== 'string' && parsed.password !== null) out.push(parsed.password, encodeURIComponent(parsed.password));
    return out.filter((s) => s.length > 0);
  } catch {
    return [];
  }
}
