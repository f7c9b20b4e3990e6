/**
 * svc's gRPC client for one service reachable at one or more URLs (`*_service_urls`): every call
 * carries the service credential (credential.ts), goes to the URLs in turn (round robin) and fails
 * over to the next when one is unreachable. A call whose every URL is unreachable is retried until
 * `timeoutMs` (`grpc_client_timeout`) after it started, then fails: callers fail closed.
 *
 * Only "unreachable" is retried: status UNAVAILABLE without the server's `svc-error-code` trailer
 * (which marks an answer of the service itself, such as its storage being down). Channels reconnect
 * by themselves with a short backoff (at most {@link MAX_RECONNECT_BACKOFF_MS}), so a service
 * that comes back is used again within about a second.
 *
 * `dnsRoundRobin` (`grpc_client_dns_roundrobin`, default true; docs/grpc.md "Balancing and dead peers"): each URL's host name is
 * resolved through DNS (again when a connection is lost, at most every 30 s) and the calls sent to
 * that URL are balanced round robin over every address it resolves to that is connected
 * (grpc-js `round_robin`); false: one address per URL, the first that connects (`pick_first`).
 * Either way the URLs themselves are taken in turn as above. The load-balancing policy is svc's:
 * a service config published in DNS TXT records is not looked up.
 *
 * TLS unless `tls` is null (`grpc_insecure: true`): the server's certificate is checked against
 * `tls.ca` (or the system's roots) and `tls.serverName` (or the URL's host name, never the address
 * it resolved to).
 *
 * Keepalive (keepalive.ts): a connection to a peer that vanished without closing it is dropped
 * after at most 40 s of silence, so calls fail over instead of waiting for their deadline.
 */
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import type { GrpcObserver } from '../observe/metrics/grpc.ts';
import { CredentialMinter, METADATA_KEY } from './credential.ts';
import { clientKeepaliveOptions, type KeepaliveTiming } from './keepalive.ts';
import { RateLimitedLog } from './rate-limited-log.ts';

/** The trailer a server sets on an error that is its own answer (not "unreachable"). */
export const ERROR_CODE_TRAILER = 'svc-error-code';

const MAX_RECONNECT_BACKOFF_MS = 1_000;
const FIRST_RETRY_DELAY_MS = 50;

export interface ClientTls {
  /** PEM roots that sign the service's certificate; undefined: the system's roots. */
  readonly ca?: string;
  /** The name the certificate must carry, when not the URL's host (`override_certificate_name`). */
  readonly serverName?: string;
}

export interface GrpcClientOptions {
  /** `http://host:port`, `https://host:port` or `host:port`; at least one. */
  readonly urls: readonly string[];
  /** From credential.ts `serviceCredentialKey`. */
  readonly credentialKey: Uint8Array;
  /** null: plaintext (`grpc_insecure: true`). */
  readonly tls: ClientTls | null;
  /** How long a call may take in all, retries included, in ms (`grpc_client_timeout`). */
  readonly timeoutMs: number;
  /** Round robin over every DNS address of a URL's host (`grpc_client_dns_roundrobin`), else one address. */
  readonly dnsRoundRobin: boolean;
  /** Keepalive timing; default svc's (keepalive.ts `KEEPALIVE`); tests shorten it. */
  readonly keepalive?: KeepaliveTiming;
  readonly observer?: GrpcObserver;
  readonly log?: (entry: Record<string, unknown>) => void;
}

/** `host:port` of a service URL. */
function grpcTarget(url: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return url;
  const u = new URL(url);
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  // (An IPv6 host name is bracketed by URL already: `[::1]`.)
  return `${u.hostname}:${port}`;
}

/** The grpc-js target of a service URL: its `host:port` resolved by grpc-js's DNS resolver. */
export function channelTarget(url: string): string {
  return `dns:///${grpcTarget(url)}`;
}

/** grpc-js's round-robin policy, as a service config (the `grpc.service_config` channel option). */
export const ROUND_ROBIN_SERVICE_CONFIG = JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] });

/** The grpc-js channel options of a client with `options` (one channel per URL). */
export function clientChannelOptions(options: Pick<GrpcClientOptions, 'tls' | 'dnsRoundRobin' | 'keepalive'>): grpc.ChannelOptions {
  return {
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': MAX_RECONNECT_BACKOFF_MS,
    ...clientKeepaliveOptions(options.keepalive),
    // svc chooses the policy: no TXT lookup (`_grpc_config.<host>`) may change it.
    'grpc.service_config_disable_resolution': 1,
    ...(options.dnsRoundRobin ? { 'grpc.service_config': ROUND_ROBIN_SERVICE_CONFIG } : {}),
    // The certificate's name: the URL's host (grpc-js's default authority), or this one.
    ...(options.tls?.serverName ? { 'grpc.ssl_target_name_override': options.tls.serverName, 'grpc.default_authority': options.tls.serverName } : {}),
  };
}

/** True when `error` means the service was not reached (worth trying another URL or again). */
function isUnreachable(error: Partial<grpc.ServiceError>): boolean {
  return error.code === grpc.status.UNAVAILABLE && (error.metadata?.get(ERROR_CODE_TRAILER).length ?? 0) === 0;
}

/** A client of one gRPC service (its definition from proto.ts), at every URL given. */
export class GrpcClient {
  readonly #service: string;
  readonly #definition: grpc.ServiceDefinition;
  readonly #clients: grpc.Client[];
  readonly #urls: readonly string[];
  readonly #minter: CredentialMinter;
  readonly #options: GrpcClientOptions;
  readonly #refusals: RateLimitedLog;
  #next = 0;
  #closed = false;

  constructor(service: string, definition: grpc.ServiceDefinition, options: GrpcClientOptions) {
    // Callers' bugs (the plan always names a URL; the methods are the service's): plain errors.
    if (options.urls.length === 0) throw new Error('bug: a gRPC client needs at least one URL');
    if (!Number.isSafeInteger(options.timeoutMs) || options.timeoutMs < 1) throw new RangeError('timeoutMs must be a positive integer');
    this.#service = service;
    this.#definition = definition;
    this.#urls = options.urls;
    this.#options = options;
    this.#minter = new CredentialMinter(options.credentialKey);
    this.#refusals = new RateLimitedLog(options.log);
    const channelOptions = clientChannelOptions(options);
    const credentials = options.tls === null ? grpc.credentials.createInsecure() : grpc.credentials.createSsl(options.tls.ca === undefined ? null : Buffer.from(options.tls.ca));
    this.#clients = options.urls.map((url) => new grpc.Client(channelTarget(url), credentials, channelOptions));
  }

  /**
   * Calls unary `method` with `request`. Rejects with the service's error, or with the last
   * "unreachable" error once every URL stayed unreachable for `timeoutMs`.
   */
  async unary<Req, Res>(method: string, request: Req): Promise<Res> {
    const attrs = this.#method(method);
    const deadline = Date.now() + this.#options.timeoutMs;
    let delay = FIRST_RETRY_DELAY_MS;
    for (;;) {
      let last: grpc.ServiceError | undefined;
      for (let tried = 0; tried < this.#clients.length; tried++) {
        const index = this.#pick();
        try {
          return await this.#unaryOnce<Req, Res>(index, method, attrs, request, deadline);
        } catch (err) {
          const e = err as grpc.ServiceError;
          if (!isUnreachable(e) || this.#closed) throw e;
          last = e;
        }
      }
      if (Date.now() + delay >= deadline) throw last!;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, MAX_RECONNECT_BACKOFF_MS);
    }
  }

  /**
   * Opens server-streaming `method` on the next URL; no retry (the caller sees the stream's error).
   * `deadlineMs`: an absolute deadline for the whole stream, or none (a long-lived watch).
   */
  async serverStream<Req, Res>(method: string, request: Req, deadlineMs?: number): Promise<grpc.ClientReadableStream<Res>> {
    const attrs = this.#method(method);
    const index = this.#pick();
    const metadata = await this.#metadata();
    const started = performance.now();
    const stream = this.#clients[index]!.makeServerStreamRequest<Req, Res>(attrs.path, attrs.requestSerialize, attrs.responseDeserialize, request, metadata, deadlineMs === undefined ? {} : { deadline: deadlineMs });
    const observer = this.#options.observer;
    let responseBytes = 0;
    if (observer) stream.on('data', (m: Res) => (responseBytes += this.#size(attrs.responseSerialize, m)));
    stream.on('status', (s: grpc.StatusObject) => {
      observer?.call('client', this.#service, method, grpc.status[s.code] ?? String(s.code), performance.now() - started, this.#size(attrs.requestSerialize, request), responseBytes);
      if (s.code === grpc.status.UNAUTHENTICATED) this.#unauthenticated(index, method);
    });
    return stream;
  }

  /** Closes every channel; later calls fail (UNAVAILABLE). */
  close(): void {
    this.#closed = true;
    for (const c of this.#clients) c.close();
  }

  #pick(): number {
    const index = this.#next;
    this.#next = (this.#next + 1) % this.#clients.length;
    return index;
  }

  #method(method: string): grpc.MethodDefinition<any, any> {
    const attrs = this.#definition[method];
    // A caller's bug: plain Error.
    if (attrs === undefined) throw new Error(`bug: ${this.#service} has no method ${method}`);
    return attrs;
  }

  async #metadata(): Promise<grpc.Metadata> {
    const metadata = new grpc.Metadata();
    metadata.set(METADATA_KEY, await this.#minter.header());
    return metadata;
  }

  #size(serialize: (value: any) => Buffer, value: unknown): number {
    if (this.#options.observer === undefined || value === undefined) return 0;
    try {
      return serialize(value).length;
    } catch {
      return 0;
    }
  }

  #unauthenticated(index: number, method: string): void {
    this.#refusals.log(String(index), {
      msg: `gRPC call refused by ${this.#service} at ${this.#urls[index]}: UNAUTHENTICATED (check that every service has the same shared_secret)`,
      grpc_method: method,
    });
  }

  async #unaryOnce<Req, Res>(index: number, method: string, attrs: grpc.MethodDefinition<any, any>, request: Req, deadline: number): Promise<Res> {
    const metadata = await this.#metadata();
    const started = performance.now();
    return new Promise<Res>((resolve, reject) => {
      this.#clients[index]!.makeUnaryRequest<Req, Res>(attrs.path, attrs.requestSerialize, attrs.responseDeserialize, request, metadata, { deadline }, (err, value) => {
        const code = err ? err.code : grpc.status.OK;
        this.#options.observer?.call('client', this.#service, method, grpc.status[code] ?? String(code), performance.now() - started, this.#size(attrs.requestSerialize, request), err ? 0 : this.#size(attrs.responseSerialize, value));
        if (err) {
          if (err.code === grpc.status.UNAUTHENTICATED) this.#unauthenticated(index, method);
          reject(err);
        } else resolve(value as Res);
      });
    });
  }
}
