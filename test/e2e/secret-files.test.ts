/**
 * Secrets from files end to end: svc run compiles a config whose `cookie_secret`, `shared_secret`,
 * `idp_client_secret` and `signing_key` are all `_file` forms (each file ending in a line break, as
 * mounted secrets do), and a user signs in through the real OpenID provider. The provider accepts
 * the client secret only if svc read the file right; the session cookie and the hand-off are keyed
 * by the cookie and shared secrets; the upstream's assertion verifies against the key in the file.
 */
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hop } from '../support/http-browser.ts';
import { startAuthWorld, type AuthWorld } from './auth-support.ts';

const last = (hops: Hop[]): Hop => hops[hops.length - 1]!;

describe('secrets from files, through svc run and a real sign-in', () => {
  let w: AuthWorld;
  let dir: string;
  // TEST KEY ONLY.
  const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-secret-files-'));
    const file = (name: string, content: string) => {
      const path = join(dir, name);
      writeFileSync(path, content, { mode: 0o600 });
      return path;
    };
    w = await startAuthWorld({
      settings: {
        // The inline forms of the defaults are removed (undefined keys are not written).
        cookie_secret: undefined,
        shared_secret: undefined,
        idp_client_secret: undefined,
        cookie_secret_file: file('cookie_secret', `${Buffer.alloc(32, 3).toString('base64')}\n`),
        shared_secret_file: file('shared_secret', `${Buffer.alloc(32, 4).toString('base64')}\r\n`),
        // The dev IdP's client secret for `svc-test` (auth-support.ts).
        idp_client_secret_file: file('idp_client_secret', 'svc-test-secret\n'),
        signing_key_file: file('signing_key.pem', pem),
      },
      routes: [{ name: 'app', from: 'https://app.localhost:PORT', to: 'UPSTREAM', allow_any_authenticated_user: true, pass_identity_headers: true }],
    });
  });
  afterAll(async () => {
    await w?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps only references in the plan it serves', () => {
    const s = w.svc.store.current.plan.body.settings;
    expect(s.cookie.secret).toMatchObject({ ref: `file:${join(dir, 'cookie_secret')}` });
    expect(s.mode.sharedSecret).toMatchObject({ ref: `file:${join(dir, 'shared_secret')}` });
    expect(s.idp.clientSecret).toMatchObject({ ref: `file:${join(dir, 'idp_client_secret')}` });
    expect(s.identity.signingKey).toMatchObject({ ref: `file:${join(dir, 'signing_key.pem')}` });
    expect(JSON.stringify(w.svc.store.current.plan)).not.toContain('svc-test-secret');
  });

  it('signs alice in and sends the upstream an assertion signed with the key from the file', async () => {
    const b = w.browser();
    const end = last(await b.signIn(`${w.origin('app')}/hello`, 'alice@example.com'));
    expect(end.status).toBe(200);
    expect(end.url).toBe(`${w.origin('app')}/hello`);
    const got = JSON.parse(end.body) as { headers: Record<string, string> };
    const { payload } = await jwtVerify(got.headers['x-svc-jwt-assertion']!, createPublicKey(pem), { audience: `app.localhost:${w.port}` });
    expect(payload).toMatchObject({ email: 'alice@example.com' });
    // The session holds: a second request needs no sign-in.
    expect((await b.request(`${w.origin('app')}/again`)).status).toBe(200);
  });
});
