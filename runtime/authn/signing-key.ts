/**
 * The key that signs the upstream attestation JWT (`x-svc-jwt-assertion`, docs/authentication.md "Identity for upstreams", "Signing
 * key rules", 4 "Signing keys", 5.4): loaded from the configured `signing_key` PEM, or generated at
 * start when there is none. ECDSA (P-256, P-384, P-521) and RSA (2048 bits or more) only; the
 * algorithm follows from the key. The public half is published as a JWKS unless the key is ephemeral.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { SvcError } from '../core/errors.ts';

/** The JWS algorithms svc signs with, one per key kind. */
export type SigningAlgorithm = 'ES256' | 'ES384' | 'ES512' | 'RS256';

/** A private key ready to sign assertions, with its public JWK. Immutable. */
export interface SigningKey {
  readonly alg: SigningAlgorithm;
  /** base64url SHA-256 JWK thumbprint (RFC 7638) of the public key. */
  readonly kid: string;
  readonly privateKey: KeyObject;
  /** Public JWK with use 'sig', kty, kid, alg, and crv/x/y (EC) or n/e (RSA). */
  readonly publicJwk: Readonly<Record<string, string>>;
  /** True for a key generated at start (no signing_key configured): not published. */
  readonly ephemeral: boolean;
}

/** A configured signing key that svc cannot use: not a PEM private key, encrypted, or of a refused kind or size. */
export class SigningKeyError extends SvcError<'SVC_ERR_SIGNING_KEY_INVALID'> {
  constructor(message: string, options?: ErrorOptions) {
    super('SVC_ERR_SIGNING_KEY_INVALID', message, options);
    this.name = 'SigningKeyError';
  }
}

/** The smallest RSA modulus accepted, in bits. */
const MIN_RSA_BITS = 2048;

/** OpenSSL curve name → JWS algorithm. Any other curve is refused. */
const EC_ALGORITHMS: Readonly<Record<string, SigningAlgorithm>> = {
  prime256v1: 'ES256',
  secp384r1: 'ES384',
  secp521r1: 'ES512',
};

/**
 * Loads a PEM private key (PKCS#8, SEC1 EC, PKCS#1 RSA): EC P-256/P-384/P-521 → ES256/384/512,
 * RSA (≥2048 bits) → RS256; Ed25519/Ed448/others and RSA < 2048 refused (SigningKeyError).
 * kid = base64url SHA-256 JWK thumbprint (RFC 7638) of the public key.
 *
 * @throws {SigningKeyError} when the text holds no readable private key (garbage, a public key, an
 *   encrypted key) or the key's kind or size is refused.
 */
export function loadSigningKey(pem: string): SigningKey {
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type:\s*4,ENCRYPTED/.test(pem)) {
    throw new SigningKeyError('signing_key: encrypted private keys are not supported; configure the key unencrypted');
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: 'pem' });
  } catch (e) {
    throw new SigningKeyError(`signing_key: not a PEM private key (PKCS#8, SEC1 or PKCS#1): ${(e as Error).message}`, { cause: e });
  }
  return fromPrivateKey(privateKey, false);
}

/** A fresh ES256 key for a run without signing_key (docs/authentication.md "Identity for upstreams"). */
export function ephemeralSigningKey(): SigningKey {
  return fromPrivateKey(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey, true);
}

/**
 * The private half of an ephemeral key as PKCS#8 PEM, for the cluster primary to hand the one
 * ephemeral key of a svc to its workers over the IPC channel (never written anywhere else).
 */
export function exportEphemeralKey(key: SigningKey): string {
  return key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** The ephemeral key `exportEphemeralKey` exported, in a worker. Throws `SigningKeyError`. */
export function importEphemeralKey(pem: string): SigningKey {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: 'pem' });
  } catch (e) {
    throw new SigningKeyError(`ephemeral signing key from the primary: ${(e as Error).message}`, { cause: e });
  }
  return fromPrivateKey(privateKey, true);
}

/** The base64 (standard) DER SPKI of the public key, for the log line docs/authentication.md "Identity for upstreams" describes. */
export function publicKeyBase64(key: SigningKey): string {
  return createPublicKey(key.privateKey).export({ type: 'spki', format: 'der' }).toString('base64');
}

const EMPTY_JWKS = Object.freeze({ keys: Object.freeze([]) as readonly Readonly<Record<string, string>>[] });

/** The JWKS document: { keys: [publicJwk] }, or { keys: [] } for an ephemeral key (not published). */
export function jwksDocument(key: SigningKey): { readonly keys: readonly Readonly<Record<string, string>>[] } {
  return key.ephemeral ? EMPTY_JWKS : Object.freeze({ keys: Object.freeze([key.publicJwk]) });
}

/** Checks the key's kind and size and builds the frozen `SigningKey`. Throws `SigningKeyError`. */
function fromPrivateKey(privateKey: KeyObject, ephemeral: boolean): SigningKey {
  const alg = algorithmOf(privateKey);
  // Node exports a public KeyObject as a JWK holding only public members (kty, crv/x/y or n/e).
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  const member = (name: string): string => {
    const v = jwk[name];
    if (typeof v !== 'string') throw new SigningKeyError(`signing_key: the public key has no JWK member "${name}"`);
    return v;
  };
  let kid: string;
  let publicJwk: Record<string, string>;
  if (alg === 'RS256') {
    const [n, e] = [member('n'), member('e')];
    kid = thumbprint({ e, kty: 'RSA', n });
    publicJwk = { use: 'sig', kty: 'RSA', kid, alg, n, e };
  } else {
    const [crv, x, y] = [member('crv'), member('x'), member('y')];
    kid = thumbprint({ crv, kty: 'EC', x, y });
    publicJwk = { use: 'sig', kty: 'EC', kid, crv, alg, x, y };
  }
  return Object.freeze({ alg, kid, privateKey, publicJwk: Object.freeze(publicJwk), ephemeral });
}

/** The JWS algorithm for a private key, or a `SigningKeyError` when its kind or size is refused. */
function algorithmOf(key: KeyObject): SigningAlgorithm {
  const type = key.asymmetricKeyType;
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve ?? 'unknown';
    const alg = EC_ALGORITHMS[curve];
    if (alg === undefined) throw new SigningKeyError(`signing_key: EC curve ${curve} is not supported; use P-256, P-384 or P-521`);
    return alg;
  }
  if (type === 'rsa') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < MIN_RSA_BITS) throw new SigningKeyError(`signing_key: RSA key of ${bits} bits is too small; use at least ${MIN_RSA_BITS}`);
    return 'RS256';
  }
  // rsa-pss keys cannot sign RS256 (PKCS#1 v1.5); Ed25519/Ed448 are refused (SVC3012, docs/diagnostics.md).
  throw new SigningKeyError(`signing_key: ${type ?? 'unknown'} keys are not supported; use an ECDSA (P-256, P-384, P-521) or RSA key`);
}

/**
 * RFC 7638 thumbprint: base64url SHA-256 of the JSON of the required public members, which the
 * caller passes in lexicographic order (EC: crv, kty, x, y; RSA: e, kty, n). Values are base64url
 * or fixed names, so `JSON.stringify` gives exactly the RFC's form (no white space, no escapes).
 * Hand-written because jose's `calculateJwkThumbprint` is async and loading is synchronous; the
 * tests check it against jose.
 */
function thumbprint(required: Readonly<Record<string, string>>): string {
  return createHash('sha256').update(JSON.stringify(required)).digest('base64url');
}
