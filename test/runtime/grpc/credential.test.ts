/** The service credential: a short-lived HS256 JWT from shared_secret, checked by every server. */
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { AUDIENCE, checkCredential, CLOCK_TOLERANCE_S, CredentialChecker, CredentialMinter, ISSUER, serviceCredentialKey, TOKEN_LIFETIME_S } from '../../../runtime/grpc/credential.ts';
import { deriveKey } from '../../../runtime/core/keys.ts';

const SECRET = Buffer.alloc(32, 1); // test secret only
const KEY = serviceCredentialKey(SECRET);

describe('service credential', () => {
  it('a minted token verifies with the same shared_secret and not with another', async () => {
    const header = await new CredentialMinter(KEY).header();
    expect(header).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    expect(await checkCredential(KEY, [header])).toBeUndefined();
    expect(await checkCredential(serviceCredentialKey(Buffer.alloc(32, 2)), [header])).toBe('bad-signature');
  });

  it('is keyed for its own purpose: a token signed with another derived key of the same secret is refused', async () => {
    const other = deriveKey(SECRET, 'hand-off');
    const token = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt().setExpirationTime('1m').sign(other);
    expect(await checkCredential(KEY, [`Bearer ${token}`])).toBe('bad-signature');
  });

  it('refuses missing, malformed, expired and wrongly addressed tokens', async () => {
    expect(await checkCredential(KEY, [])).toBe('missing');
    expect(await checkCredential(KEY, ['Basic abc'])).toBe('malformed');
    expect(await checkCredential(KEY, ['Bearer a.b.c'])).toBe('malformed');
    const minted = await new CredentialMinter(KEY).header();
    expect(await checkCredential(KEY, [minted, minted])).toBe('malformed');
    const t0 = Date.now();
    const old = await new CredentialMinter(KEY, () => t0 - (TOKEN_LIFETIME_S + 60) * 1000).header();
    expect(await checkCredential(KEY, [old])).toBe('expired');
    const wrongAud = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuer(ISSUER).setAudience('elsewhere').setIssuedAt().setExpirationTime('1m').sign(KEY);
    expect(await checkCredential(KEY, [`Bearer ${wrongAud}`])).toBe('invalid-claims');
    const noExp = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt().sign(KEY);
    expect(await checkCredential(KEY, [`Bearer ${noExp}`])).toBe('invalid-claims');
  });

  it('a client reuses its token until close to expiry, then mints a new one', async () => {
    let now = Date.now();
    const minter = new CredentialMinter(KEY, () => now);
    const a = await minter.header();
    now += 10_000;
    expect(await minter.header()).toBe(a);
    now += (TOKEN_LIFETIME_S - 30) * 1000;
    expect(await minter.header()).not.toBe(a);
  });
});

describe('CredentialChecker (the server side)', () => {
  it('accepts a remembered token until its expiry, then refuses it; never remembers a refused one', async () => {
    let now = Date.now();
    const checker = new CredentialChecker(KEY, () => now);
    const header = await new CredentialMinter(KEY, () => now).header();
    expect(await checker.check([header])).toBeUndefined();
    expect(await checker.check([header])).toBeUndefined();
    now += (TOKEN_LIFETIME_S + 10) * 1000;
    expect(await checker.check([header])).toBe('expired');
    const wrong = await new CredentialMinter(serviceCredentialKey(Buffer.alloc(32, 2)), () => now).header();
    expect(await checker.check([wrong])).toBe('bad-signature');
    expect(await checker.check([wrong])).toBe('bad-signature');
  });
});

describe('only tokens shaped like the ones svc mints (docs/security.md S41)', () => {
  /** Signs a credential by hand with the shared-secret key, as a peer holding the key could. */
  const handMade = async (iatS: number, expS: number) =>
    `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt(iatS).setExpirationTime(expS).sign(KEY)}`;
  const t0 = 1_900_000_000; // a fixed clock, in seconds
  const at = () => t0 * 1000;

  it('refuses an `iat` further in the future than the clock skew, accepts one within it', async () => {
    expect(await checkCredential(KEY, [await handMade(t0 + 3600, t0 + 3600 + TOKEN_LIFETIME_S)], at)).toBe('invalid-claims');
    expect(await checkCredential(KEY, [await handMade(t0 + CLOCK_TOLERANCE_S + 1, t0 + CLOCK_TOLERANCE_S + 1 + TOKEN_LIFETIME_S)], at)).toBe('invalid-claims');
    expect(await checkCredential(KEY, [await handMade(t0 + CLOCK_TOLERANCE_S, t0 + CLOCK_TOLERANCE_S + TOKEN_LIFETIME_S)], at)).toBeUndefined();
  });

  it('refuses a lifetime longer than svc mints (ten years, or one second more), accepts exactly it', async () => {
    expect(await checkCredential(KEY, [await handMade(t0, t0 + 10 * 365 * 24 * 3600)], at)).toBe('invalid-claims');
    expect(await checkCredential(KEY, [await handMade(t0, t0 + TOKEN_LIFETIME_S + 1)], at)).toBe('invalid-claims');
    // An old `iat` with a fresh `exp` is a long lifetime too.
    expect(await checkCredential(KEY, [await handMade(t0 - 3600, t0 + 60)], at)).toBe('invalid-claims');
    expect(await checkCredential(KEY, [await handMade(t0 - 10, t0 - 10 + TOKEN_LIFETIME_S)], at)).toBeUndefined();
  });

  it('the server side refuses them too, and keeps refusing them (never remembered)', async () => {
    const checker = new CredentialChecker(KEY, at);
    const longLived = await handMade(t0, t0 + 10 * 365 * 24 * 3600);
    expect(await checker.check([longLived])).toBe('invalid-claims');
    expect(await checker.check([longLived])).toBe('invalid-claims');
    expect(await checker.check([await new CredentialMinter(KEY, at).header()])).toBeUndefined();
  });
});
