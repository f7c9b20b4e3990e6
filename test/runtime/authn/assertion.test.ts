/** docs/authentication.md "Identity for upstreams": the signed `x-svc-jwt-assertion`, its claims, and the per-(session, audience) cache. */
import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { describe, expect, it } from 'vitest';
import { AssertionSigner, AssertionSignerError, type AssertionInput } from '../../../runtime/authn/assertion.ts';
import { jwksDocument, loadSigningKey, type SigningKey } from '../../../runtime/authn/signing-key.ts';
import { checkedEmail } from '../../../runtime/policy/email.ts';
import type { Identity } from '../../../runtime/core/types.ts';

const pemOf = (namedCurve: string): string => generateKeyPairSync('ec', { namedCurve }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const KEY = loadSigningKey(pemOf('P-256'));
const NOW = 1_700_000_000_000;
const ISSUER = 'authenticate.example.com';
const AUDIENCE = 'app.example.com:8443';

const identity: Identity = { user: 'user-123', email: 'ada@example.com', groups: ['admins', 'eng'], claims: { name: 'Ada' } };
const input = (over: Partial<AssertionInput> = {}): AssertionInput => ({ sessionId: 'session-1', issuer: ISSUER, audience: AUDIENCE, identity, ...over });

/** A clock the test moves by hand. */
function clock(start = NOW): { now: () => number; set: (ms: number) => void } {
  let t = start;
  return { now: () => t, set: (ms) => void (t = ms) };
}

async function verify(token: string, key: SigningKey = KEY, audience = AUDIENCE, atMs = NOW) {
  const jwks = createLocalJWKSet(jwksDocument(key) as unknown as JSONWebKeySet);
  return jwtVerify(token, jwks, { audience, issuer: ISSUER, algorithms: [key.alg], currentDate: new Date(atMs) });
}

describe('AssertionSigner.sign', () => {
  it('signs exactly the specified claims and header, verifiable against the JWKS with audience and issuer checks', async () => {
    const signer = new AssertionSigner(KEY, { now: () => NOW + 999 });
    const token = await signer.sign(input());
    const { payload, protectedHeader } = await verify(token);
    expect(protectedHeader).toEqual({ alg: 'ES256', kid: KEY.kid, typ: 'JWT' });
    expect(decodeProtectedHeader(token)).toEqual(protectedHeader);
    const iat = Math.floor(NOW / 1000);
    expect(payload).toEqual({
      iss: ISSUER,
      aud: AUDIENCE,
      sub: 'user-123',
      user: 'user-123',
      email: 'ada@example.com',
      groups: ['admins', 'eng'],
      sid: 'session-1',
      iat,
      exp: iat + 300,
      jti: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
    });
    await expect(verify(token, KEY, 'other.example.com')).rejects.toMatchObject({ code: 'ERR_JWT_CLAIM_VALIDATION_FAILED', claim: 'aud' });
    await expect(verify(token, KEY, 'app.example.com')).rejects.toMatchObject({ claim: 'aud' });
    await expect(verify(token, KEY, AUDIENCE, (iat + 301) * 1000)).rejects.toMatchObject({ code: 'ERR_JWT_EXPIRED' });
    await expect(verify(token, loadSigningKey(pemOf('P-256')))).rejects.toMatchObject({ code: 'ERR_JWKS_NO_MATCHING_KEY' });
  });

  it('signs with each key kind', async () => {
    for (const key of [loadSigningKey(pemOf('P-384')), loadSigningKey(pemOf('P-521')), loadSigningKey(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }) as string)]) {
      const token = await new AssertionSigner(key, { now: () => NOW }).sign(input());
      expect((await verify(token, key)).protectedHeader.alg).toBe(key.alg);
    }
  });

  it('omits email when the identity has none, and honors ttlMs', async () => {
    const { email: _, ...noEmail } = identity;
    const token = await new AssertionSigner(KEY, { now: () => NOW, ttlMs: 60_000, reuseMarginMs: 10_000 }).sign(input({ identity: noEmail }));
    const { payload } = await verify(token);
    expect(payload).not.toHaveProperty('email');
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(60);
  });

  it('merges extra claims but never lets them override the registered or identity claims', async () => {
    const extraClaims = {
      ...JSON.parse('{"__proto__": {"polluted": true}}'),
      department: 'research',
      nested: { a: [1, 2] },
      sub: 'admin',
      aud: 'evil.example.com',
      iss: 'evil.example.com',
      exp: 9_999_999_999,
      iat: 1,
      nbf: 9_999_999_999,
      jti: 'fixed',
      user: 'admin',
      email: 'evil@example.com',
      groups: ['root'],
      sid: 'other',
    } as Record<string, unknown>;
    const token = await new AssertionSigner(KEY, { now: () => NOW }).sign(input({ extraClaims }));
    const { payload } = await verify(token);
    expect(payload).toMatchObject({ department: 'research', nested: { a: [1, 2] }, sub: 'user-123', aud: AUDIENCE, iss: ISSUER, exp: Math.floor(NOW / 1000) + 300, iat: Math.floor(NOW / 1000), user: 'user-123', email: 'ada@example.com', groups: ['admins', 'eng'], sid: 'session-1' });
    expect(payload).not.toHaveProperty('nbf');
    expect(payload.jti).not.toBe('fixed');
    expect(Object.getOwnPropertyDescriptor(payload, '__proto__')?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('gives every token a fresh jti', async () => {
    const signer = new AssertionSigner(KEY, { now: () => NOW });
    const jtis = new Set<unknown>();
    for (let i = 0; i < 20; i++) jtis.add((await verify(await signer.sign(input()))).payload.jti);
    expect(jtis.size).toBe(20);
  });

  it('property: the verified sub/user/groups/sid equal the input, email the checked address, for arbitrary identities', async () => {
    const signer = new AssertionSigner(KEY, { now: () => NOW });
    const text = fc.string({ unit: 'binary', maxLength: 40 });
    await fc.assert(
      fc.asyncProperty(
        fc.record({ user: text, email: fc.option(fc.oneof(text, fc.emailAddress()), { nil: undefined }), groups: fc.array(text, { maxLength: 8 }), sessionId: text }),
        async ({ user, email, groups, sessionId }) => {
          const id: Identity = { user, groups, claims: {}, ...(email === undefined ? {} : { email }) };
          const { payload } = await verify(await signer.sign(input({ identity: id, sessionId })));
          expect(payload.sub).toBe(user);
          expect(payload['user']).toBe(user);
          // Only an address is signed, domain lower-cased (runtime/policy/email.ts).
          expect(payload['email']).toBe(checkedEmail(email));
          expect(payload['groups']).toEqual(groups);
          expect(payload['sid']).toBe(sessionId);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('AssertionSigner cache', () => {
  it('reuses the identical token for the same (session, audience) until exp - margin, then signs anew', async () => {
    const c = clock();
    const signer = new AssertionSigner(KEY, { now: c.now });
    expect(signer.cached('session-1', AUDIENCE)).toBeUndefined();
    const token = await signer.sign(input());
    expect(signer.cached('session-1', AUDIENCE)).toBe(token);
    const exp = Math.floor(NOW / 1000) + 300;
    c.set(exp * 1000 - 60_000 - 1);
    expect(signer.cached('session-1', AUDIENCE)).toBe(token);
    c.set(exp * 1000 - 60_000);
    expect(signer.cached('session-1', AUDIENCE)).toBeUndefined();
    expect(signer.size).toBe(0);
    const next = await signer.sign(input());
    expect(next).not.toBe(token);
    expect(signer.cached('session-1', AUDIENCE)).toBe(next);
  });

  it('never serves a token for one audience or session to another', async () => {
    const signer = new AssertionSigner(KEY, { now: () => NOW });
    const a = await signer.sign(input());
    expect(signer.cached('session-1', 'other.example.com')).toBeUndefined();
    expect(signer.cached('session-2', AUDIENCE)).toBeUndefined();
    expect(signer.cached('session-1', 'app.example.com')).toBeUndefined();
    const b = await signer.sign(input({ audience: 'other.example.com' }));
    expect(b).not.toBe(a);
    expect(signer.cached('session-1', AUDIENCE)).toBe(a);
    expect(signer.cached('session-1', 'other.example.com')).toBe(b);
    expect((await verify(b, KEY, 'other.example.com')).payload.aud).toBe('other.example.com');
    expect(signer.size).toBe(2);
  });

  it('forget drops every token of the session and only that session', async () => {
    const signer = new AssertionSigner(KEY, { now: () => NOW });
    await signer.sign(input());
    await signer.sign(input({ audience: 'b.example.com' }));
    const other = await signer.sign(input({ sessionId: 'session-2' }));
    signer.forget('session-1');
    expect(signer.cached('session-1', AUDIENCE)).toBeUndefined();
    expect(signer.cached('session-1', 'b.example.com')).toBeUndefined();
    expect(signer.cached('session-2', AUDIENCE)).toBe(other);
    expect(signer.size).toBe(1);
    signer.forget('never-seen');
    expect(signer.size).toBe(1);
  });

  it('does not cache a token whose sign was in flight when the session was forgotten', async () => {
    const signer = new AssertionSigner(KEY, { now: () => NOW });
    const stale = signer.sign(input());
    signer.forget('session-1');
    const fresh = signer.sign(input({ identity: { ...identity, groups: ['changed'] } }));
    // The two signs finish in either order (WebCrypto): whichever ends last, the stale token is
    // never the cached one.
    const [staleToken, freshToken] = await Promise.all([stale, fresh]);
    expect(staleToken).not.toBe(freshToken);
    expect(signer.cached('session-1', AUDIENCE)).toBe(freshToken);
    expect((await verify(freshToken)).payload['groups']).toEqual(['changed']);
  });

  it('evicts the sessions signed longest ago past maxEntries', async () => {
    const signer = new AssertionSigner(KEY, { now: () => NOW, maxEntries: 3 });
    const t1 = await signer.sign(input({ sessionId: 's1' }));
    await signer.sign(input({ sessionId: 's2' }));
    await signer.sign(input({ sessionId: 's2', audience: 'b.example.com' }));
    expect(signer.size).toBe(3);
    const t3 = await signer.sign(input({ sessionId: 's3' }));
    expect(signer.size).toBe(3);
    expect(signer.cached('s1', AUDIENCE)).toBeUndefined();
    expect(signer.cached('s2', AUDIENCE)).toBeDefined();
    expect(signer.cached('s3', AUDIENCE)).toBe(t3);
    expect(t1).not.toBe(t3);
    // A new sign moves its session to the young end: s2 outlives s3 now.
    await signer.sign(input({ sessionId: 's2', audience: 'c.example.com' }));
    expect(signer.cached('s3', AUDIENCE)).toBeUndefined();
    expect(signer.size).toBe(3);
    // One session alone over the limit keeps its newest audiences.
    const one = new AssertionSigner(KEY, { now: () => NOW, maxEntries: 2 });
    for (const aud of ['a', 'b', 'c']) await one.sign(input({ audience: aud }));
    expect(one.size).toBe(2);
    expect(one.cached('session-1', 'a')).toBeUndefined();
    expect(one.cached('session-1', 'c')).toBeDefined();
  });

  it('refuses unusable options with SVC_ERR_ASSERTION_OPTIONS', () => {
    for (const options of [{ ttlMs: 0 }, { ttlMs: 1500 }, { ttlMs: 60_000, reuseMarginMs: 60_000 }, { reuseMarginMs: -1 }, { maxEntries: 0 }, { ttlMs: Number.NaN }]) {
      expect(() => new AssertionSigner(KEY, options), JSON.stringify(options)).toThrow(AssertionSignerError);
    }
    expect(() => new AssertionSigner(KEY, { maxEntries: 0 })).toThrow(expect.objectContaining({ code: 'SVC_ERR_ASSERTION_OPTIONS' }));
  });
});
