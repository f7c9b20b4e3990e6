/**
 * `/.svc/webauthn` on a route host, the device page (docs/authentication.md "Devices"): a signed-in
 * user registers an authenticator (the WebAuthn registration ceremony) or authenticates with one
 * registered before (the authentication ceremony); the session then keeps which device it used, and
 * the browser goes back to the URL it came from. The ceremonies are @simplewebauthn/server's.
 *
 *   GET  /.svc/webauthn?svc_redirect_uri=…   the page (top-level navigations only)
 *   POST /.svc/webauthn/options               {ceremony, type?, redirect} → {options, state}
 *   POST /.svc/webauthn/verify                {state, response} → {redirect}
 *
 * The POSTs need the session's CSRF token (`x-svc-csrf`) and an `Origin` of exactly this host.
 * `state` carries the challenge, the ceremony, the session it was made for and the checked return
 * URL, signed with an expiry (signed-params.ts, S05); the verify step takes a challenge once
 * (`consumeOnce` in the data broker, every instance), only for the session that asked for it.
 * The relying party id is the registrable domain of the authenticate service's host
 * (core/relying-party.ts), so one registration serves every route host under it; each ceremony's
 * origin must be this route host.
 */
import { randomBytes } from 'node:crypto';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { loadFeature } from '../core/load-feature.ts';
import { csrfToken, csrfTokenValid } from '../core/keys.ts';
import { relyingPartyId, underRelyingParty } from '../core/relying-party.ts';
import { isDeviceStore, type DeviceRecord, type DeviceStore, type DeviceType } from '../core/device-store.ts';
import type { SessionStore } from '../core/session-store.ts';
import type { ResolvedSession } from '../sessions/session-cache.ts';
import type { AuthState } from './auth-state.ts';
import { absoluteTarget, returnScheme, sendPage, type EndpointContext, type Req, type Res } from './endpoint-context.ts';
import { acceptOf, sendError } from './error-page.ts';
import { devicePage } from './pages.ts';
import { signParams, verifyParams } from './signed-params.ts';
import { writeHead } from './write-head.ts';

/** How long a ceremony may take, from its options to its answer. */
const CEREMONY_MS = 5 * 60_000;
/** Largest JSON body read (an attestation with certificates fits well below). */
const MAX_BODY_BYTES = 64 * 1024;

/**
 * @simplewebauthn/server (and the ASN.1 and X.509 packages under it), loaded lazily: when a plan
 * that reads `device` is prepared (generation.ts, so a broken installation refuses that plan at
 * start with SVC_ERR_FEATURE_UNAVAILABLE), else at the first ceremony. A process whose plans never
 * use devices never holds it (docs/architecture.md §5 "Lazy feature loading").
 */
export function webAuthnLibrary(): Promise<typeof import('@simplewebauthn/server')> {
  library ??= loadFeature('devices (WebAuthn)', () => import('@simplewebauthn/server')).catch((e: unknown) => {
    library = undefined; // a later attempt may find the installation mended
    throw e;
  });
  return library;
}
let library: Promise<typeof import('@simplewebauthn/server')> | undefined;

/** `/.svc/webauthn` and its two POST endpoints on a route host (see the file's comment). */
export async function webauthnEndpoint(ctx: EndpointContext, state: AuthState, session: ResolvedSession | null, params: URLSearchParams, host: string, path: string, req: Req, res: Res, requestId: string): Promise<void> {
  const method = req.method ?? 'GET';
  const accept = acceptOf(req);
  const store = ctx.store;
  const rpId = relyingPartyId(state.authenticateHost);
  if (!isDeviceStore(store) || rpId === null || !underRelyingParty(host, rpId)) return sendError(res, 404, requestId, 'devices-not-available', accept, false);
  if (!session) return sendError(res, 401, requestId, 'sign-in-required', accept, false);
  const origin = `${returnScheme(ctx, state)}://${host}`;
  if (path === '/.svc/webauthn' && method === 'GET') {
    const dest = req.headers['sec-fetch-dest'];
    if (dest !== undefined && dest !== 'document') return sendError(res, 403, requestId, 'top-level-navigation-only', accept, false);
    const back = absoluteTarget(params.get('svc_redirect_uri'), state) ?? `${origin}/.svc/`;
    const devices = await store.listDevices(session.record.userId);
    const nonce = randomBytes(16).toString('base64');
    const html = devicePage({ devices, current: session.record.deviceCredentialId, csrf: csrfToken(state.keys!.csrf, session.record.id), redirect: back, nonce });
    return sendPage(res, 200, devicePageHeaders(nonce), html);
  }
  if (method !== 'POST' || (path !== '/.svc/webauthn/options' && path !== '/.svc/webauthn/verify')) return sendError(res, 404, requestId, 'no-such-endpoint', accept, false);
  // CSRF: the session's token, and a request made by a page of this very origin.
  const given = req.headers['x-svc-csrf'];
  if (!csrfTokenValid(state.keys!.csrf, session.record.id, typeof given === 'string' ? given : undefined)) return refuse(ctx, res, requestId, 403, 'csrf-token-invalid', session);
  if (req.headers['origin'] !== origin) return refuse(ctx, res, requestId, 403, 'origin-mismatch', session);
  const body = await readJson(req);
  if (body === undefined) return refuse(ctx, res, requestId, 400, 'body-invalid', session);
  if (path === '/.svc/webauthn/options') return options(ctx, state, store, session, body, rpId, origin, res, requestId);
  return verify(ctx, state, store, session, body, rpId, origin, res, requestId);
}

async function options(ctx: EndpointContext, state: AuthState, store: SessionStore & DeviceStore, session: ResolvedSession, body: Record<string, unknown>, rpId: string, origin: string, res: Res, requestId: string): Promise<void> {
  const ceremony = body['ceremony'];
  const type: DeviceType = body['type'] === 'enclave_only' ? 'enclave_only' : 'any';
  const redirect = absoluteTarget(typeof body['redirect'] === 'string' ? body['redirect'] : undefined, state) ?? `${origin}/.svc/`;
  const devices = await store.listDevices(session.record.userId);
  let publicKey: unknown;
  let challenge: string;
  if (ceremony === 'register') {
    const { generateRegistrationOptions } = await webAuthnLibrary();
    const o = await generateRegistrationOptions({
      rpName: 'svc',
      rpID: rpId,
      userName: session.record.email ?? session.record.userId,
      userID: new TextEncoder().encode(session.publicId),
      attestationType: 'none',
      excludeCredentials: devices.map((d) => ({ id: d.credentialId, transports: [...d.transports] })),
      // `enclave_only`: built into this device, and it must verify its user.
      authenticatorSelection: type === 'enclave_only' ? { authenticatorAttachment: 'platform', userVerification: 'required', residentKey: 'discouraged' } : { userVerification: 'preferred', residentKey: 'discouraged' },
      timeout: CEREMONY_MS,
    });
    publicKey = o;
    challenge = o.challenge;
  } else if (ceremony === 'authenticate') {
    if (devices.length === 0) return refuse(ctx, res, requestId, 400, 'no-registered-device', session);
    const { generateAuthenticationOptions } = await webAuthnLibrary();
    const o = await generateAuthenticationOptions({ rpID: rpId, allowCredentials: devices.map((d) => ({ id: d.credentialId, transports: [...d.transports] })), userVerification: 'preferred', timeout: CEREMONY_MS });
    publicKey = o;
    challenge = o.challenge;
  } else return refuse(ctx, res, requestId, 400, 'ceremony-invalid', session);
  const signed = signParams({ c: challenge, k: ceremony, s: session.publicId, t: type, r: redirect }, state.keys!.params, ctx.now() + CEREMONY_MS);
  json(res, 200, { options: publicKey, state: signed.toString() });
}

async function verify(ctx: EndpointContext, state: AuthState, store: SessionStore & DeviceStore, session: ResolvedSession, body: Record<string, unknown>, rpId: string, origin: string, res: Res, requestId: string): Promise<void> {
  const opened = typeof body['state'] === 'string' ? verifyParams(new URLSearchParams(body['state']), state.keys!.params, ctx.now()) : { ok: false as const, reason: 'missing' as const };
  if (!opened.ok) return refuse(ctx, res, requestId, 400, 'challenge-invalid', session, { detail: opened.reason });
  const { c: challenge, k: ceremony, s: sid, t: type, r: redirect } = opened.params;
  // The challenge was made for this session, and is taken once, on every instance.
  if (sid !== session.publicId) return refuse(ctx, res, requestId, 400, 'challenge-other-session', session);
  if (!(await store.consumeOnce(`webauthn\0${challenge}`, ctx.now() + CEREMONY_MS))) return refuse(ctx, res, requestId, 400, 'challenge-used', session);
  const response = body['response'];
  if (typeof response !== 'object' || response === null) return refuse(ctx, res, requestId, 400, 'body-invalid', session);
  let credentialId: string;
  try {
    if (ceremony === 'register') {
      const r = response as RegistrationResponseJSON;
      const { verifyRegistrationResponse } = await webAuthnLibrary();
      const v = await verifyRegistrationResponse({ response: r, expectedChallenge: challenge!, expectedOrigin: origin, expectedRPID: rpId, requireUserVerification: type === 'enclave_only' });
      if (!v.verified) return refuse(ctx, res, requestId, 400, 'registration-refused', session);
      const info = v.registrationInfo;
      // `enclave_only` only when the browser says the authenticator is built in and it verified its user.
      const enclave = r.authenticatorAttachment === 'platform' && info.userVerified;
      if (type === 'enclave_only' && !enclave) return refuse(ctx, res, requestId, 400, 'registration-not-platform', session);
      const record: DeviceRecord = {
        credentialId: info.credential.id,
        userId: session.record.userId,
        type: enclave ? 'enclave_only' : 'any',
        publicKey: Buffer.from(info.credential.publicKey).toString('base64url'),
        counter: info.credential.counter,
        approved: state.body.settings.authenticate.deviceSelfRegistrationApproved,
        transports: [...(info.credential.transports ?? r.response.transports ?? [])],
        createdAtMs: ctx.now(),
      };
      await store.addDevice(record);
      ctx.log?.({ msg: 'device registered', requestId, user: session.record.userId, device: record.credentialId, type: record.type, approved: record.approved });
      credentialId = record.credentialId;
    } else if (ceremony === 'authenticate') {
      const r = response as AuthenticationResponseJSON;
      const device = typeof r.id === 'string' ? await store.getDevice(r.id) : undefined;
      // Another user's credential authenticates nobody here.
      if (device === undefined || device.userId !== session.record.userId) return refuse(ctx, res, requestId, 400, 'device-unknown', session);
      const { verifyAuthenticationResponse } = await webAuthnLibrary();
      const v = await verifyAuthenticationResponse({
        response: r,
        expectedChallenge: challenge!,
        expectedOrigin: origin,
        expectedRPID: rpId,
        // The counter rule is the data broker's, atomic across instances and logged (below): the
        // library is given 0, so it checks the signature and leaves the counter to advanceCounter.
        credential: { id: device.credentialId, publicKey: Buffer.from(device.publicKey, 'base64url'), counter: 0, transports: [...device.transports] as never },
        requireUserVerification: device.type === 'enclave_only',
      });
      if (!v.verified) return refuse(ctx, res, requestId, 400, 'authentication-refused', session);
      // The counter rule, atomically in the data broker (S59): a clone is refused and logged.
      const counted = await store.advanceCounter(device.credentialId, v.authenticationInfo.newCounter);
      if (counted === 'regressed') {
        ctx.log?.({ msg: 'device signature counter did not grow: a cloned authenticator? refused', requestId, user: session.record.userId, device: device.credentialId, stored: device.counter, received: v.authenticationInfo.newCounter });
        return refuse(ctx, res, requestId, 400, 'device-counter-regressed', session);
      }
      if (counted === 'missing') return refuse(ctx, res, requestId, 400, 'device-unknown', session);
      credentialId = device.credentialId;
    } else return refuse(ctx, res, requestId, 400, 'ceremony-invalid', session);
  } catch (e) {
    if (isStoreError(e)) throw e;
    // The library's refusals (wrong origin, RP id, challenge, signature, counter, malformed data).
    return refuse(ctx, res, requestId, 400, 'ceremony-refused', session, { detail: (e as Error).message });
  }
  // The session keeps the device it used, written over the record as it is now (a refresh may have
  // replaced its tokens meanwhile); the put tells every cache (session-cache.ts).
  const latest = await ctx.store.get(session.record.id);
  if (latest === undefined) return refuse(ctx, res, requestId, 401, 'sign-in-required', session);
  await ctx.store.put({ ...latest, deviceCredentialId: credentialId });
  json(res, 200, { redirect });
}

function isStoreError(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SVC_ERR_');
}

/** A refused ceremony: logged with its stable reason, answered as JSON. */
function refuse(ctx: EndpointContext, res: Res, requestId: string, status: number, reason: string, session: ResolvedSession, extra: Record<string, unknown> = {}): void {
  ctx.log?.({ msg: 'device ceremony refused', requestId, reason, user: session.record.userId, ...extra });
  json(res, status, { status, error: reason, request_id: requestId });
}

function json(res: Res, status: number, value: unknown): void {
  const body = `${JSON.stringify(value)}\n`;
  writeHead(res, status, { 'content-type': 'application/json', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

async function readJson(req: Req): Promise<Record<string, unknown> | undefined> {
  const type = String(req.headers['content-type'] ?? '');
  if (!/^application\/json\b/i.test(type)) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  try {
    const v = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The page's headers: svc's page headers, with its one inline script allowed by nonce. */
function devicePageHeaders(nonce: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'cross-origin-resource-policy': 'same-origin',
    'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}'; connect-src 'self'; frame-ancestors 'none'`,
  };
}

