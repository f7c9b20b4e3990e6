/** The signing key rules and the JWKS endpoint (docs/authentication.md "Identity for upstreams"): which keys load, their alg, kid and published set. */
import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { SignJWT, calculateJwkThumbprint, createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWK } from 'jose';
import { describe, expect, it } from 'vitest';
import {
  SigningKeyError,
  ephemeralSigningKey,
  jwksDocument,
  loadSigningKey,
  publicKeyBase64,
  type SigningKey,
} from '../../../runtime/authn/signing-key.ts';

const ec = (namedCurve: string): KeyObject => generateKeyPairSync('ec', { namedCurve }).privateKey;
const rsa = (modulusLength: number): KeyObject => generateKeyPairSync('rsa', { modulusLength }).privateKey;
const pem = (key: KeyObject, type: 'pkcs8' | 'sec1' | 'pkcs1'): string => key.export({ type, format: 'pem' }) as string;

const P256 = ec('P-256');
const P384 = ec('P-384');
const P521 = ec('P-521');
const RSA2048 = rsa(2048);

/** Signs a token with the key and verifies it against the key's published JWKS. */
async function verifiesAgainstJwks(key: SigningKey): Promise<void> {
  const token = await new SignJWT({ sub: 'u' }).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' }).sign(key.privateKey);
  const jwks = createLocalJWKSet(jwksDocument(key) as unknown as JSONWebKeySet);
  const { payload, protectedHeader } = await jwtVerify(token, jwks, { algorithms: [key.alg] });
  expect(payload.sub).toBe('u');
  expect(protectedHeader.kid).toBe(key.kid);
}

function expectRefused(text: string): void {
  let caught: unknown;
  try {
    loadSigningKey(text);
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(SigningKeyError);
  expect((caught as SigningKeyError).code).toBe('SVC_ERR_SIGNING_KEY_INVALID');
}

describe('loadSigningKey', () => {
  const cases: ReadonlyArray<readonly [string, KeyObject, 'pkcs8' | 'sec1' | 'pkcs1', string]> = [
    ['P-256 PKCS#8', P256, 'pkcs8', 'ES256'],
    ['P-256 SEC1', P256, 'sec1', 'ES256'],
    ['P-384 PKCS#8', P384, 'pkcs8', 'ES384'],
    ['P-384 SEC1', P384, 'sec1', 'ES384'],
    ['P-521 PKCS#8', P521, 'pkcs8', 'ES512'],
    ['P-521 SEC1', P521, 'sec1', 'ES512'],
    ['RSA-2048 PKCS#8', RSA2048, 'pkcs8', 'RS256'],
    ['RSA-2048 PKCS#1', RSA2048, 'pkcs1', 'RS256'],
  ];

  it.each(cases)('%s gives the right alg and a JWKS that verifies its signature', async (_name, privateKey, type, alg) => {
    const key = loadSigningKey(pem(privateKey, type));
    expect(key.alg).toBe(alg);
    expect(key.ephemeral).toBe(false);
    expect(key.publicJwk['alg']).toBe(alg);
    expect(key.publicJwk['kid']).toBe(key.kid);
    expect(key.publicJwk).not.toHaveProperty('d');
    await verifiesAgainstJwks(key);
  });

  it('publishes EC keys with exactly use, kty, kid, crv, alg, x, y (all strings)', () => {
    const key = loadSigningKey(pem(P384, 'pkcs8'));
    const doc = jwksDocument(key);
    expect(doc.keys).toHaveLength(1);
    const jwk = doc.keys[0] ?? {};
    expect(Object.keys(jwk).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    expect(jwk).toMatchObject({ use: 'sig', kty: 'EC', crv: 'P-384', alg: 'ES384' });
    for (const v of Object.values(jwk)) expect(typeof v).toBe('string');
  });

  it('publishes RSA keys with use, kty, kid, alg, n, e', () => {
    const jwk = loadSigningKey(pem(RSA2048, 'pkcs1')).publicJwk;
    expect(Object.keys(jwk).sort()).toEqual(['alg', 'e', 'kid', 'kty', 'n', 'use']);
    expect(jwk).toMatchObject({ use: 'sig', kty: 'RSA', alg: 'RS256', e: 'AQAB' });
  });

  it('kid is the RFC 7638 thumbprint, stable across loads and PEM forms, and differs between keys', async () => {
    for (const [k, a, b] of [[P256, 'pkcs8', 'sec1'], [P521, 'sec1', 'pkcs8'], [RSA2048, 'pkcs8', 'pkcs1']] as const) {
      const first = loadSigningKey(pem(k, a));
      expect(loadSigningKey(pem(k, a)).kid).toBe(first.kid);
      expect(loadSigningKey(pem(k, b)).kid).toBe(first.kid);
      expect(first.kid).toBe(await calculateJwkThumbprint(createPublicKey(k).export({ format: 'jwk' }) as JWK, 'sha256'));
    }
    expect(loadSigningKey(pem(P256, 'pkcs8')).kid).not.toBe(loadSigningKey(pem(ec('P-256'), 'pkcs8')).kid);
  });

  it('refuses Ed25519, Ed448, RSA-1024, secp256k1, RSA-PSS, public keys, encrypted keys and garbage', () => {
    expectRefused(pem(generateKeyPairSync('ed25519').privateKey, 'pkcs8'));
    expectRefused(pem(generateKeyPairSync('ed448').privateKey, 'pkcs8'));
    expectRefused(pem(rsa(1024), 'pkcs8'));
    expectRefused(pem(rsa(1024), 'pkcs1'));
    expectRefused(pem(ec('secp256k1'), 'pkcs8'));
    expectRefused(pem(generateKeyPairSync('rsa-pss', { modulusLength: 2048 }).privateKey, 'pkcs8'));
    expectRefused(createPublicKey(P256).export({ type: 'spki', format: 'pem' }) as string);
    expectRefused(P256.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'secret' }) as string);
    expectRefused('this is not a key');
    expectRefused('');
    expectRefused('-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n');
  });
});

describe('ephemeralSigningKey', () => {
  it('is an ES256 key that signs but is not published', async () => {
    const key = ephemeralSigningKey();
    expect(key.alg).toBe('ES256');
    expect(key.ephemeral).toBe(true);
    expect(jwksDocument(key)).toEqual({ keys: [] });
    expect(key.publicJwk).toMatchObject({ kty: 'EC', crv: 'P-256', kid: key.kid });
    const token = await new SignJWT({}).setProtectedHeader({ alg: key.alg }).sign(key.privateKey);
    await expect(jwtVerify(token, createPublicKey(key.privateKey))).resolves.toBeDefined();
    expect(ephemeralSigningKey().kid).not.toBe(key.kid);
  });
});

describe('publicKeyBase64', () => {
  it('is the standard base64 DER SPKI of the public key', () => {
    const key = loadSigningKey(pem(P256, 'sec1'));
    const b64 = publicKeyBase64(key);
    expect(b64).toMatch(/^[A-Za-z0-9+/]+=*$/);
    const back = createPublicKey({ key: Buffer.from(b64, 'base64'), format: 'der', type: 'spki' });
    expect(back.equals(createPublicKey(P256))).toBe(true);
  });
});
