/**
 * Login CSRF and session fixation (docs/security.md S30), against a real `svc run`, the
 * real OpenID provider (demo/dev-idp.ts) and an echo upstream. The rules (docs/authentication.md):
 *
 * - a hand-off sets a session only in the browser that started the sign-in: svc binds every browser
 *   sign-in bound for a route host to a random value in a short-lived cookie on that host, and the
 *   hand-off carries its hash. An attacker's own hand-off link, however it was made (after the
 *   provider, or straight from the attacker's authenticate-host session), opened by a victim sets
 *   nothing, whether or not the victim has a sign-in of their own in progress;
 * - a sign-in bound for a route never adopts an authenticate-host session a sibling subdomain could
 *   have planted: with `Secure` cookies that session lives in a `__Host-` cookie, which nobody but
 *   the authenticate host can set, and a planted `cookie_name` cookie there is no session; without
 *   `Secure` (the plain-HTTP quickstart) the provider is asked again every time;
 * - route session cookies keep `cookie_name` and are `SameSite=Lax`;
 * - S30: sign-out revokes the session server-side; a saved cookie (route or authenticate host)
 *   replayed afterwards opens nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpBrowser, type Hop } from '../support/http-browser.ts';
import { startAuthWorld, type AuthWorld } from '../e2e/auth-support.ts';

const last = (hops: Hop[]): Hop => hops[hops.length - 1]!;
const setCookies = (hop: Hop): string[] => [hop.headers['set-cookie'] ?? []].flat();
const emailSeen = (hop: Hop): string | undefined => (JSON.parse(hop.body) as { headers: Record<string, string> }).headers['x-svc-claim-email'];

const ROUTES = [
  { name: 'app', from: 'https://app.localhost:PORT', to: 'UPSTREAM', allow_any_authenticated_user: true, pass_identity_headers: true },
  { name: 'other', from: 'https://other.localhost:PORT', to: 'UPSTREAM', allow_any_authenticated_user: true, pass_identity_headers: true },
];

/** A browser of `w` that stops before opening any route host's hand-off (the attacker keeps the link). */
function stopsAtHandoff(w: AuthWorld): HttpBrowser {
  return new HttpBrowser((url) => {
    if (url.pathname === '/.svc/callback') return undefined;
    if (url.hostname.endsWith('.localhost')) return Number(url.port) === w.port ? { port: w.port } : undefined;
    if (url.hostname === '127.0.0.1' && Number(url.port) === w.idp.port) return { port: w.idp.port };
    return undefined;
  });
}

/** The attacker signs in as `login` for `url` and keeps the unused hand-off link. */
async function unusedHandoff(w: AuthWorld, attacker: HttpBrowser, url: string, login: string): Promise<string> {
  const end = last(await attacker.signIn(url, login));
  expect(end.status).toBe(302);
  const link = String(end.headers['location']);
  expect(link).toContain('/.svc/callback?svc_handoff=');
  return link;
}

/** Opening the attacker's hand-off in `victim` is refused and sets no session anywhere. */
async function refusedIn(w: AuthWorld, victim: HttpBrowser, link: string): Promise<void> {
  const r = await victim.request(link);
  expect(r.status).toBe(400);
  expect(r.body).toContain('hand-off-unbound');
  expect(setCookies(r).filter((c) => /^_svc=[^;]/.test(c))).toEqual([]);
  expect(victim.cookies('app.localhost')['_svc']).toBeUndefined();
  const after = await victim.request(`${w.origin('app')}/after`);
  expect(after.status).toBe(302); // still not signed in: sent to sign in, not let in as the attacker
}

/** The rules that hold with and without `Secure` cookies. */
function bothModes(world: () => AuthWorld): void {
  it('the attacker’s unused hand-off link, opened by a victim, is refused and signs nobody in', async () => {
    const w = world();
    const link = await unusedHandoff(w, stopsAtHandoff(w), `${w.origin('app')}/notes`, 'bob@other.example');
    await refusedIn(w, w.browser(), link);
    // A victim with a sign-in of their own in progress on that host holds another binding: refused too.
    const victim = w.browser();
    expect((await victim.request(`${w.origin('app')}/mine`)).status).toBe(302);
    expect(Object.keys(victim.cookies('app.localhost')).some((n) => n.startsWith('_svc_bind_'))).toBe(true);
    await refusedIn(w, victim, link);
    // Refusing it spent nothing: the victim's own sign-in goes on and is the victim's.
    const own = last(await victim.signIn(`${w.origin('app')}/mine`, 'alice@example.com'));
    expect(own.status).toBe(200);
    expect(emailSeen(own)).toBe('alice@example.com');
  });

  it('a hand-off opens in the browser that started the sign-in, once; its binding cookie goes with it', async () => {
    const w = world();
    const b = w.browser();
    const first = await b.request(`${w.origin('app')}/x`);
    expect(first.status).toBe(302);
    const bind = setCookies(first).find((c) => c.startsWith('_svc_bind_'))!;
    // Host-only, HttpOnly, sent only to the hand-off (never to an upstream), short-lived.
    expect(bind).toMatch(/^_svc_bind_[A-Za-z0-9_-]{12}=[A-Za-z0-9_-]{43}; Path=\/\.svc\/callback; Max-Age=1200(; Secure)?; HttpOnly; SameSite=Lax$/);
    expect(bind).not.toContain('Domain=');
    // The signed link carries only its hash, never the value.
    expect(String(first.headers['location'])).not.toContain(bind.split(';')[0]!.split('=')[1]!);
    const hops = await b.signIn(String(first.headers['location']), 'alice@example.com');
    const handoff = hops.find((h) => h.url.includes('/.svc/callback?svc_handoff='))!;
    expect(handoff.status).toBe(302);
    expect(setCookies(handoff)).toEqual(expect.arrayContaining([expect.stringMatching(/^_svc_bind_[A-Za-z0-9_-]{12}=; Path=\/\.svc\/callback; Max-Age=0/)]));
    expect(emailSeen(last(hops))).toBe('alice@example.com');
    // Single use even with the binding cookie that opened it.
    const again = await w.browser().request(handoff.url, { headers: { cookie: bind.split(';')[0]! } });
    expect(again.status).toBe(400);
    expect(again.body).toContain('hand-off-replayed');
  });

  it('route session cookies keep cookie_name and are SameSite=Lax', async () => {
    const w = world();
    const hops = await w.browser().signIn(`${w.origin('app')}/`, 'alice@example.com');
    const handoff = hops.find((h) => h.url.includes('/.svc/callback?svc_handoff='))!;
    const session = setCookies(handoff).find((c) => /^_svc=[^;]/.test(c))!;
    expect(session).toMatch(/; SameSite=Lax$/);
    expect(session).not.toContain('Domain=');
  });

  it('S30: sign-out revokes the session; saved cookies replayed afterwards open nothing', async () => {
    const w = world();
    const b = w.browser();
    const hops = await b.signIn(`${w.origin('app')}/`, 'alice@example.com');
    expect(last(hops).status).toBe(200);
    const routeCookie = b.cookies('app.localhost')['_svc']!;
    const authCookies = Object.entries(b.cookies('authenticate.localhost')).filter(([n]) => n === '_svc' || n === '__Host-_svc');
    expect(authCookies).toHaveLength(1);
    const confirm = await b.request(`${w.origin('app')}/.svc/signout/`);
    await b.submitForm(confirm);
    expect((await w.browser().request(`${w.origin('app')}/`, { headers: { cookie: `_svc=${routeCookie}` } })).status).toBe(302);
    const [name, value] = authCookies[0]!;
    const info = await w.browser().request(`${w.origin('authenticate')}/.svc/`, { headers: { cookie: `${name}=${value}` } });
    expect(info.status).toBe(302);
    expect(String(info.headers['location'])).toContain('/.svc/sign_in?');
  });
}

/** A victim whose authenticate host carries the attacker's cookie under `name` starts a sign-in for `app`. */
async function victimWithPlanted(w: AuthWorld, name: string, value: string): Promise<HttpBrowser> {
  const victim = w.browser();
  victim.setCookie('authenticate.localhost', name, value);
  return victim;
}

describe('login CSRF and session fixation (issue 13 §2), plain-HTTP quickstart (cookies not Secure)', () => {
  let w: AuthWorld;
  beforeAll(async () => {
    w = await startAuthWorld({ settings: { jwt_claims_headers: ['email'] }, routes: ROUTES });
  });
  afterAll(async () => {
    await w?.close();
  });

  bothModes(() => w);

  it('a planted authenticate-host cookie is not adopted: the provider is asked, and the victim is the victim', async () => {
    const attacker = w.browser();
    expect(emailSeen(last(await attacker.signIn(`${w.origin('app')}/`, 'bob@other.example')))).toBe('bob@other.example');
    // Without Secure the authenticate host's cookie is plain `_svc`: a sibling subdomain can plant it.
    const planted = attacker.cookies('authenticate.localhost')['_svc']!;
    expect(planted).toMatch(/./);
    const victim = await victimWithPlanted(w, '_svc', planted);
    const hops = await victim.navigate(`${w.origin('app')}/secret`);
    const signIn = hops.find((h) => h.url.startsWith(`${w.origin('authenticate')}/.svc/sign_in?`))!;
    expect(String(signIn.headers['location']).startsWith(w.idp.issuer)).toBe(true);
    expect(hops.some((h) => h.url.includes('/.svc/callback?'))).toBe(false);
    const end = last(await victim.signIn(`${w.origin('app')}/secret`, 'alice@example.com'));
    expect(emailSeen(end)).toBe('alice@example.com');
  });
});

describe('login CSRF and session fixation (issue 13 §2), behind TLS (Secure cookies)', () => {
  let w: AuthWorld;
  beforeAll(async () => {
    w = await startAuthWorld({ secure: true, settings: { jwt_claims_headers: ['email'] }, routes: ROUTES });
  });
  afterAll(async () => {
    await w?.close();
  });

  bothModes(() => w);

  it('the authenticate host keeps its session in a __Host- cookie, and a signed-in user skips the provider', async () => {
    const b = w.browser();
    const hops = await b.signIn(`${w.origin('app')}/`, 'alice@example.com');
    const callback = hops.find((h) => h.url.startsWith(`${w.origin('authenticate')}/oauth2/callback?`))!;
    const session = setCookies(callback).find((c) => c.startsWith('__Host-_svc='))!;
    expect(session).toMatch(/^__Host-_svc=[A-Za-z0-9_-]+; Path=\/; Max-Age=\d+; Secure; HttpOnly; SameSite=Lax$/);
    expect(setCookies(callback).some((c) => /^_svc=[^;]/.test(c))).toBe(false);
    // Another route: straight to its hand-off, no trip to the provider (the cookie cannot be planted).
    const next = await b.navigate(`${w.origin('other')}/`);
    expect(next.some((h) => h.url.startsWith(w.idp.issuer))).toBe(false);
    expect(emailSeen(last(next))).toBe('alice@example.com');
  });

  it('a planted cookie_name cookie on the authenticate host is no session there', async () => {
    const attacker = w.browser();
    await attacker.signIn(`${w.origin('app')}/`, 'bob@other.example');
    // What a sibling can plant: a cookie named `_svc`, with the attacker's own valid route session.
    const victim = await victimWithPlanted(w, '_svc', attacker.cookies('app.localhost')['_svc']!);
    const hops = await victim.navigate(`${w.origin('app')}/secret`);
    expect(hops.some((h) => h.url.includes('/.svc/callback?'))).toBe(false);
    expect(last(hops).url.startsWith(w.idp.issuer)).toBe(true);
    expect(emailSeen(last(await victim.signIn(`${w.origin('app')}/secret`, 'alice@example.com')))).toBe('alice@example.com');
  });

  it('a hand-off made straight from the attacker’s authenticate-host session is bound too', async () => {
    const attacker = stopsAtHandoff(w);
    await unusedHandoff(w, attacker, `${w.origin('app')}/`, 'bob@other.example');
    // Signed in at the authenticate host: the next route's hand-off comes without the provider.
    const hops = await attacker.navigate(`${w.origin('other')}/`);
    expect(hops.some((h) => h.url.startsWith(w.idp.issuer))).toBe(false);
    const link = String(last(hops).headers['location']);
    expect(link).toContain(`${w.origin('other')}/.svc/callback?svc_handoff=`);
    const victim = w.browser();
    const r = await victim.request(link);
    expect(r.status).toBe(400);
    expect(r.body).toContain('hand-off-unbound');
    expect(victim.cookies('other.localhost')['_svc']).toBeUndefined();
  });
});
