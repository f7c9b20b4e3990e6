/**
 * The Redis key layout of the session store (documented in docs/scale-out.md). No key name holds a
 * raw session id, hand-off id or lease holder: each is an HMAC under a key derived from
 * `shared_secret` (purpose `session store names`), so names reveal nothing and cannot be guessed.
 *
 *   svc:<ns>:{<h>}:s   a session record, or the revocation that replaces it on delete, each
 *                      sealed with its version (redis-values.ts); the key's TTL is the record's
 *                      expiry in both cases
 *   svc:<ns>:{<h>}:d   a registered device (docs/authentication.md "Devices"), sealed, no TTL; its
 *                      revocation leaves a sealed mark in its place, so the credential id is never
 *                      registered again
 *   svc:<ns>:o:<h>     a used one-time key (sign-in hand-off), until its expiry
 *   svc:<ns>:l:<name>  a lease: the HMAC of its holder and its sealed expiry, until it lapses
 *   svc:<ns>:changes   the pub/sub channel of replaced and deleted sessions and of approved and
 *                      revoked devices (sealed ids)
 *
 * `<ns>` is derived from the secret too: deployments with different secrets never see each other's
 * keys in one Redis (one database, or one cluster). Deployments may also use different database
 * numbers (`/db` in the URL; a cluster has only database 0). `{<h>}` is a cluster hash tag.
 */
import { createHmac } from 'node:crypto';

/** Names of one deployment's keys. */
export class KeyLayout {
  readonly #key: Buffer;
  /** `svc:<ns>:` */
  readonly prefix: string;
  readonly channel: string;

  /** `key`: 32 bytes (deriveKey(secret, 'session store names')). */
  constructor(key: Uint8Array) {
    this.#key = Buffer.from(key);
    this.prefix = `svc:${this.#mac('namespace', '').slice(0, 8)}:`;
    this.channel = `${this.prefix}changes`;
  }

  /** The key of the session `id`. */
  session(id: string): string {
    return `${this.prefix}{${this.#mac('session', id)}}:s`;
  }

  /** The pattern matching every session key of this deployment (for SCAN). */
  get sessionPattern(): string {
    return `${this.prefix}{*}:s`;
  }

  /** The key of the device with credential id `credentialId`. */
  device(credentialId: string): string {
    return `${this.prefix}{${this.#mac('device', credentialId)}}:d`;
  }

  /** The pattern matching every device key of this deployment (for SCAN). */
  get devicePattern(): string {
    return `${this.prefix}{*}:d`;
  }

  /** The key of the one-time mark `key`. */
  once(key: string): string {
    return `${this.prefix}o:${this.#mac('once', key)}`;
  }

  /** The key of the lease `name` (lease names are svc's own constants, not secrets). */
  lease(name: string): string {
    return `${this.prefix}l:${name}`;
  }

  /** What a lease key holds for `holder`. */
  holder(holder: string): string {
    return this.#mac('holder', holder);
  }

  #mac(kind: string, value: string): string {
    return createHmac('sha256', this.#key).update(`${kind}\0${value}`).digest('base64url').slice(0, 27);
  }
}
