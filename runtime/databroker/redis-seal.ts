/**
 * Values at rest in Redis (docs/scale-out.md): every value svc writes is sealed with AES-256-GCM
 * under a key derived from `shared_secret` (purpose `session store seal`), with the Redis key name
 * as associated data. A reader of Redis learns nothing from a value; a writer cannot forge one, nor
 * move a valid value to another key (the name would not match). A writer can put back a value the
 * key held before: redis-values.ts binds a version into the associated data, and the store refuses
 * versions older than it has seen.
 *
 * Layout: `0x01` (version) ‖ 12-byte nonce ‖ ciphertext ‖ 16-byte tag.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 0x01;
const NONCE = 12;
const TAG = 16;

/** Seals and opens values bound to their key names. */
export class ValueSeal {
  readonly #key: Buffer;

  /** `key`: 32 bytes (deriveKey(secret, 'session store seal')). */
  constructor(key: Uint8Array) {
    if (key.length !== 32) throw new RangeError('the seal key must be 32 bytes');
    this.#key = Buffer.from(key);
  }

  /** The sealed form of `plain`, bound to `name`. */
  seal(name: string, plain: Buffer): Buffer {
    const nonce = randomBytes(NONCE);
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce);
    cipher.setAAD(Buffer.from(name));
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([Buffer.of(VERSION), nonce, body, cipher.getAuthTag()]);
  }

  /** The plain value, or undefined when `sealed` was not sealed by this key for `name` (tampered, moved, foreign). */
  open(name: string, sealed: Buffer): Buffer | undefined {
    if (sealed.length < 1 + NONCE + TAG || sealed[0] !== VERSION) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, sealed.subarray(1, 1 + NONCE));
      decipher.setAAD(Buffer.from(name));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG));
      return Buffer.concat([decipher.update(sealed.subarray(1 + NONCE, sealed.length - TAG)), decipher.final()]);
    } catch {
      return undefined;
    }
  }
}
