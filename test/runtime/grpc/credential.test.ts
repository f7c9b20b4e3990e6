/** The service credential: a short-lived HS256 JWT from shared_secret, checked by every server. */
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { AUDIENCE, checkCredential, CredentialChecker, CredentialMinter, ISSUER, serviceCredentialKey, TOKEN_LIFETIME_S } from '../../../runtime/grpc/credential.ts';
import { deriveKey } from '../../../runtime/authn/keys.ts';

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
