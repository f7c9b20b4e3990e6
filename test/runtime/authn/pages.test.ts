/** pages.ts: the user info page shows claims as data and never shows token-bearing ones (S26). */
import { describe, expect, it } from 'vitest';
import { deniedAnswer, devicePage, SIGN_IN_FAILURES, signInFailedAnswer, userInfoPage, type SignInFailure } from '../../../runtime/authn/pages.ts';
import type { SessionRecord } from '../../../runtime/core/session-store.ts';

function record(claims: Record<string, unknown>): SessionRecord {
  return { id: 'h', userId: 'alice', email: 'alice@example.com', groups: ['eng'], claims, expiresAtMs: Date.UTC(2030, 0, 1), createdAtMs: 0 };
}

function shownClaims(html: string): unknown {
  const m = /<pre id="claims">([^<]*)<\/pre>/.exec(html);
  if (!m) throw new Error('no claims block');
  return JSON.parse(m[1]!.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code))));
}

describe('userInfoPage', () => {
  it('a claim named __proto__ (JSON from a provider) is shown as data, not swallowed as a prototype', () => {
    const claims = JSON.parse('{"__proto__": {"role": "x"}, "name": "Alice"}') as Record<string, unknown>;
    expect(shownClaims(userInfoPage(record(claims), 'csrf'))).toEqual(JSON.parse('{"__proto__": {"role": "x"}, "name": "Alice"}'));
  });

  it('hides claims whose names carry tokens, secrets or passwords', () => {
    const html = userInfoPage(record({ name: 'Alice', refresh_token: 'r', client_secret: 's', Password: 'p' }), 'csrf');
    expect(shownClaims(html)).toEqual({ name: 'Alice' });
    expect(html).not.toMatch(/refresh_token|client_secret|Password/);
  });
});

describe('deniedAnswer', () => {
  const denial = { requestId: 'r1', reasons: ['groups-unauthorized'], words: ['your groups do not include `<b>`'], user: { id: 'u"1', email: '<script>@x', name: '<img src=x>' }, csrf: 'tok"en', here: 'https://app.example.com/a?b="c"' };

  it('escapes every user value, keeps backticked values as code, and posts both actions with the CSRF token', () => {
    const a = deniedAnswer(denial, false);
    expect(a.status).toBe(403);
    expect(a.body).not.toMatch(/<script>|<img|<b>/);
    expect(a.body).toContain('your groups do not include <code>&#60;b&#62;</code>');
    expect(a.body.match(/name="svc_csrf" value="tok&#34;en"/g)).toHaveLength(2);
    expect(a.body).toContain('name="svc_redirect_uri" value="https://app.example.com/a?b=&#34;c&#34;"');
  });

  it('without a session: no forms; JSON keeps its shape and adds the reasons', () => {
    expect(deniedAnswer({ ...denial, user: null, csrf: null }, false).body).not.toContain('<form');
    expect(JSON.parse(deniedAnswer(denial, true).body)).toEqual({ status: 403, error: 'Forbidden', reason: 'groups-unauthorized', message: expect.any(String), request_id: 'r1', reasons: ['groups-unauthorized'], explanation: ['your groups do not include `<b>`'] });
  });
});

describe('the device answers', () => {
  const denial = { requestId: 'r1', status: 450 as const, reasons: ['device-unauthorized'], words: ['your device type is not `enclave_only`'], user: { id: 'alice' }, csrf: 'tok', here: 'https://app.example.com/a?b="c"' };

  it('450: "Device not authorized" with the reason, and a way to use another device coming back here', () => {
    const a = deniedAnswer(denial, false);
    expect(a.status).toBe(450);
    expect(a.body).toContain('<h1>450 · Device not authorized</h1>');
    expect(a.body).toContain('<code id="reasons">device-unauthorized</code>');
    expect(a.body).toContain(`href="/.svc/webauthn?svc_redirect_uri=${encodeURIComponent(denial.here)}"`);
    expect(JSON.parse(deniedAnswer(denial, true).body)).toMatchObject({ status: 450, error: 'Device Not Authorized', reason: 'device-unauthorized' });
    // A 403 offers no other device.
    expect(deniedAnswer({ ...denial, status: 403 }, false).body).not.toContain('other-device');
  });

  it('the device page hands the script its values only through escaped attributes, under its nonce', () => {
    const html = devicePage({ devices: [], current: undefined, csrf: 'to"k<', redirect: 'https://app.example.com/?a="b"<script>', nonce: 'n0nce' });
    expect(html).toContain('data-csrf="to&#34;k&#60;"');
    expect(html).toContain('data-redirect="https://app.example.com/?a=&#34;b&#34;&#60;script&#62;"');
    expect(html).not.toContain('"b"<script>');
    expect(html.match(/<script\b/g)).toHaveLength(1);
    expect(html).toContain('<script nonce="n0nce">');
    expect(html).toContain('id="no-devices"');
  });

  it('the user page lists devices with their state and the one in use', () => {
    const r = { ...record({}), deviceCredentialId: 'cred-1-AAAAAAAAAAAAAAAAAA' };
    const html = userInfoPage(r, 'csrf', [
      { credentialId: 'cred-1-AAAAAAAAAAAAAAAAAA', userId: 'alice', type: 'enclave_only', publicKey: 'x', counter: 0, approved: true, transports: [], createdAtMs: 0 },
      { credentialId: 'cred-2-BBBBBBBBBBBBBBBBBB', userId: 'alice', type: 'any', publicKey: 'x', counter: 0, approved: false, transports: [], createdAtMs: 0 },
    ]);
    expect(html).toContain('enclave_only · approved · in use by this session');
    expect(html).toContain('any · pending approval</li>');
  });
});

describe('signInFailedAnswer', () => {
  it('every failure says what happened without blaming an upstream, and links "try again" escaped', () => {
    for (const reason of Object.keys(SIGN_IN_FAILURES) as SignInFailure[]) {
      const a = signInFailedAnswer(reason, 'r1', '/x?"', false);
      expect(a.status).not.toBe(502);
      expect(a.body).not.toMatch(/upstream/i);
      expect(a.body).toContain('id="try-again" href="/x?&#34;"');
      expect(JSON.parse(signInFailedAnswer(reason, 'r1', '/x', true).body)).toMatchObject({ status: a.status, reason, request_id: 'r1', retry: '/x' });
    }
  });

  it('shows a provider error only when it is a plain code', () => {
    expect(signInFailedAnswer('identity-provider-refused', 'r', '/', false, 'access_denied').body).toContain('access_denied');
    expect(signInFailedAnswer('identity-provider-refused', 'r', '/', false, 'Call <evil> now').body).not.toContain('evil');
  });
});
