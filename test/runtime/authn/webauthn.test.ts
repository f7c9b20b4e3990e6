/**
 * The device page's refusals (docs/authentication.md "Devices", docs/security.md S61), through the
 * endpoint itself with a memory store: the relying party id, a foreign `Origin`, a bad CSRF token,
 * a challenge tampered with, made for another session, stale or used twice, an answer naming
 * another origin, and another user's credential. The ceremonies that succeed are proved in Chromium
 * (test/e2e/device-webauthn.test.ts).
 */
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { csrfToken, deriveKey } from '../../../runtime/core/keys.ts';
import type { DeviceRecord } from '../../../runtime/core/device-store.ts';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { webauthnEndpoint } from '../../../runtime/authn/webauthn.ts';
import { resolvedSession, type ResolvedSession } from '../../../runtime/sessions/session-cache.ts';
import type { EndpointContext, Req, Res } from '../../../runtime/authn/endpoint-context.ts';
import type { AuthState } from '../../../runtime/authn/auth-state.ts';
import { sessionRecord } from '../databroker/records.ts';

const HOST = 'app.example.com';
const ORIGIN = `https://${HOST}`;
const SECRET = Buffer.alloc(32, 9);
const CSRF_KEY = deriveKey(SECRET, 'csrf');

const state = {
  authenticateHost: 'authenticate.example.com',
  keys: { params: SECRET, csrf: CSRF_KEY, flow: new Uint8Array(32), handoff: new Uint8Array(32), programmatic: new Uint8Array(32) },
  cookie: { secure: true },
  redirects: { allowedOrigins: new Set([ORIGIN]) },
  body: { settings: { authenticate: { deviceSelfRegistrationApproved: false } } },
} as unknown as AuthState;

function device(over: Partial<DeviceRecord> = {}): DeviceRecord {
  return { credentialId: 'cred-alice-AAAAAAAAAAAAAAAA', userId: 'alice', type: 'any', publicKey: 'pQECAyYg', counter: 0, approved: true, transports: ['usb'], createdAtMs: 0, ...over };
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

describe('the device page', () => {
  const stores: MemoryStore[] = [];
  const logs: Record<string, unknown>[] = [];
  let now = Date.now();
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    logs.length = 0;
    now = Date.now();
  });
  const open = () => {
    const s = new MemoryStore({ sweepIntervalMs: 0 });
    stores.push(s);
    return s;
  };
  const ctxOf = (store: MemoryStore): EndpointContext => ({ store, sessions: undefined as never, scheme: 'https', now: () => now, log: (e) => logs.push(e) });
  const sessionOf = (user: string): ResolvedSession => resolvedSession(sessionRecord(Date.now(), { userId: user }));

  /** Calls the endpoint with a JSON body; `headers` override the valid CSRF token and origin. */
  async function call(store: MemoryStore, session: ResolvedSession, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const req = Readable.from([Buffer.from(JSON.stringify(body))]) as unknown as Req & { method: string; headers: Record<string, string> };
    req.method = 'POST';
    req.headers = { 'content-type': 'application/json', origin: ORIGIN, 'x-svc-csrf': csrfToken(CSRF_KEY, session.record.id), ...headers };
    let status = 0;
    let text = '';
    const res = { writeHead: (s: number) => void (status = s), end: (b?: string) => void (text = b ?? '') } as unknown as Res;
    await webauthnEndpoint(ctxOf(store), state, session, new URLSearchParams(), HOST, path, req, res, 'req-1');
    return { status, body: JSON.parse(text) as Record<string, unknown> };
  }

  /** A registration answer naming `origin`, for the challenge in `options` (the attestation is junk: refused before or at it). */
  function registrationAnswer(options: Answer, origin: string): unknown {
    const challenge = (options.body['options'] as { challenge: string }).challenge;
    const clientDataJSON = Buffer.from(JSON.stringify({ type: 'webauthn.create', challenge, origin, crossOrigin: false })).toString('base64url');
    return { id: 'AAAAAAAAAAAAAAAAAAAAAA', rawId: 'AAAAAAAAAAAAAAAAAAAAAA', type: 'public-key', clientExtensionResults: {}, response: { clientDataJSON, attestationObject: 'o2NmbXRkbm9uZQ' } };
  }

  it('refuses a call from another origin, or without the session\'s CSRF token', async () => {
    const store = open();
    const alice = sessionOf('alice');
    expect(await call(store, alice, '/.svc/webauthn/options', { ceremony: 'register' }, { origin: 'https://evil.example.org' })).toMatchObject({ status: 403, body: { error: 'origin-mismatch' } });
    expect(await call(store, alice, '/.svc/webauthn/options', { ceremony: 'register' }, { origin: `https://other.${HOST}` })).toMatchObject({ status: 403, body: { error: 'origin-mismatch' } });
    expect(await call(store, alice, '/.svc/webauthn/options', { ceremony: 'register' }, { 'x-svc-csrf': csrfToken(CSRF_KEY, 'another-session') })).toMatchObject({ status: 403, body: { error: 'csrf-token-invalid' } });
    const ok = await call(store, alice, '/.svc/webauthn/options', { ceremony: 'register', type: 'any' });
    expect(ok.status).toBe(200);
    expect(ok.body['options']).toMatchObject({ rp: { id: 'example.com' }, attestation: 'none' });
  });

  it('refuses an answer naming another origin, and takes its challenge', async () => {
    const store = open();
    const alice = sessionOf('alice');
    const options = await call(store, alice, '/.svc/webauthn/options', { ceremony: 'register', type: 'any' });
    const wrong = await call(store, alice, '/.svc/webauthn/verify', { state: options.body['state'], response: registrationAnswer(options, 'https://evil.example.org') });
    expect(wrong).toMatchObject({ status: 400, body: { error: 'ceremony-refused' } });
    expect(String(logs.find((e) => e['reason'] === 'ceremony-refused')?.['detail'])).toMatch(/origin/i);
    // The right origin now: the challenge was taken by the refused answer.
    const again = await call(store, alice, '/.svc/webauthn/verify', { state: options.body['state'], response: registrationAnswer(options, ORIGIN) });
    expect(again).toMatchObject({ status: 400, body: { error: 'challenge-used' } });
    expect(await store.listDevices()).toEqual([]);
  });

  it('refuses a challenge tampered with, made for another session, or stale', async () => {
    const store = open();
    const alice = sessionOf('alice');
    const options = await call(store, alice, '/.svc/webauthn/options', { ceremony: 'register', type: 'any' });
    const signed = new URLSearchParams(String(options.body['state']));
    signed.set('r', 'https://evil.example.org/');
    expect(await call(store, alice, '/.svc/webauthn/verify', { state: signed.toString(), response: registrationAnswer(options, ORIGIN) })).toMatchObject({ status: 400, body: { error: 'challenge-invalid' } });
    // Another session of the same user, same browser or not: not its challenge.
    expect(await call(store, sessionOf('alice'), '/.svc/webauthn/verify', { state: options.body['state'], response: registrationAnswer(options, ORIGIN) })).toMatchObject({ status: 400, body: { error: 'challenge-other-session' } });
    // Five minutes later the challenge is stale.
    now += 5 * 60_000 + 1;
    expect(await call(store, alice, '/.svc/webauthn/verify', { state: options.body['state'], response: registrationAnswer(options, ORIGIN) })).toMatchObject({ status: 400, body: { error: 'challenge-invalid' } });
    expect(logs.some((e) => e['detail'] === 'expired')).toBe(true);
  });

  it('refuses another user\'s credential', async () => {
    const store = open();
    await store.addDevice(device());
    await store.addDevice(device({ credentialId: 'cred-bob-BBBBBBBBBBBBBBBBBB', userId: 'bob' }));
    const alice = sessionOf('alice');
    const options = await call(store, alice, '/.svc/webauthn/options', { ceremony: 'authenticate' });
    expect(options.status).toBe(200);
    // Only alice's own devices are offered.
    expect((options.body['options'] as { allowCredentials: { id: string }[] }).allowCredentials.map((c) => c.id)).toEqual(['cred-alice-AAAAAAAAAAAAAAAA']);
    const bobs = { id: 'cred-bob-BBBBBBBBBBBBBBBBBB', rawId: 'cred-bob-BBBBBBBBBBBBBBBBBB', type: 'public-key', clientExtensionResults: {}, response: { clientDataJSON: 'e30', authenticatorData: 'AA', signature: 'AA' } };
    expect(await call(store, alice, '/.svc/webauthn/verify', { state: options.body['state'], response: bobs })).toMatchObject({ status: 400, body: { error: 'device-unknown' } });
    expect((await store.getDevice('cred-bob-BBBBBBBBBBBBBBBBBB'))?.counter).toBe(0);
    // Nothing of a user without devices to authenticate with.
    expect(await call(store, sessionOf('carol'), '/.svc/webauthn/options', { ceremony: 'authenticate' })).toMatchObject({ status: 400, body: { error: 'no-registered-device' } });
  });
});
