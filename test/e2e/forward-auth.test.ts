/**
 * Forward auth end to end: a REAL nginx (`auth_request`) and a REAL Caddy (`forward_auth`) in front
 * of an upstream, each delegating authentication and authorization to svc's forward-auth endpoints
 * (docs/forward-auth.md), with a real OpenID provider for sign-in. The proxies run the operator configs
 * shipped in docs/forward-auth/ (placeholders replaced by loopback hosts and ports, TLS lines
 * removed), so the docs are what is tested.
 *
 * The user only ever talks to the proxy (`app.localhost:<proxy port>`); the proxy asks svc
 * (`fwd.localhost:<svc port>`), passes its sign-in redirect on, and routes `/.svc/` (the sign-in
 * hand-off that sets the route-domain cookie) to svc. svc's config has the route
 * `from: https://app.localhost:<proxy port>`, whose upstream svc never uses itself here.
 *
 * Also here: svc's forward-auth endpoints called directly (no proxy), for the inputs a proxy may
 * pass (docs/security.md S12: a URL that cannot be rebuilt never gets a 200).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpBrowser, type Hop } from '../support/http-browser.ts';
import { describeWithCommands, which } from '../support/system.ts';
import { freePort, startAuthWorld, testSigningKey, type AuthWorld } from './auth-support.ts';

const DOCS = new URL('../../docs/forward-auth/', import.meta.url);
const last = (hops: Hop[]): Hop => hops[hops.length - 1]!;
const echoed = (hop: Hop): { url: string; headers: Record<string, string> } => JSON.parse(hop.body) as { url: string; headers: Record<string, string> };

// ---------------------------------------------------------------------------------------------
// The world: one svc (with the IdP and the echo upstream) for both proxies and the direct tests.

let w: AuthWorld;
let nginxPort: number;
let caddyPort: number;
let jwks: JSONWebKeySet;

const routesFor = (port: number) => [
  // Listed first: the public part of the same host (S16 for anonymous requests, S07 through a proxy).
  { name: `public-${port}`, from: `https://app.localhost:${port}`, prefix: '/public/', to: 'UPSTREAM', allow_public_unauthenticated_access: true, pass_identity_headers: true },
  { name: `app-${port}`, from: `https://app.localhost:${port}`, to: 'UPSTREAM', policy: 'allow if domain is "example.com"', pass_identity_headers: true },
  // Another site, public, on the proxy's port: its Host must not open the application's site.
  { name: `other-${port}`, from: `https://public.localhost:${port}`, to: 'UPSTREAM', allow_public_unauthenticated_access: true },
];

beforeAll(async () => {
  nginxPort = await freePort();
  caddyPort = await freePort();
  w = await startAuthWorld({
    settings: { signing_key: testSigningKey(), jwt_claims_headers: ['email', 'groups'] },
    routes: [...routesFor(nginxPort), ...routesFor(caddyPort)],
  });
  jwks = JSON.parse((await w.browser().request(`${w.origin('authenticate')}/.well-known/svc/jwks.json`)).body) as JSONWebKeySet;
});
afterAll(async () => {
  await w?.close();
});

/** A browser whose `app.localhost:<front>` goes to `to` (the proxy, or svc itself); `*.localhost:<svc>` to svc; the IdP to the IdP. */
function browserVia(front: number, to: number): HttpBrowser {
  return new HttpBrowser((url) => {
    if (url.hostname === 'app.localhost' && Number(url.port) === front) return { port: to };
    if (url.hostname.endsWith('.localhost') && Number(url.port) === w.port) return { port: w.port };
    if (url.hostname === '127.0.0.1' && Number(url.port) === w.idp.port) return { port: w.idp.port };
    return undefined;
  });
}

/** One request with its target sent byte for byte (no URL parsing or escaping on the way). */
function rawRequest(port: number, lines: string[]): Promise<{ status: number; head: string; body: string }> {
  return new Promise((resolve, reject) => {
    // Written, not ended: a half-closed connection makes nginx and Caddy drop the request.
    const socket = connect(port, '127.0.0.1', () => socket.write(`${lines.join('\r\n')}\r\nConnection: close\r\n\r\n`));
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error('rawRequest timed out')));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      const head = end < 0 ? text : text.slice(0, end);
      resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0), head, body: end < 0 ? '' : text.slice(end + 4) });
    });
  });
}

/** Replaces each placeholder; every one must occur (so a doc that drifts fails here, not silently). */
function substitute(file: string, text: string, table: readonly (readonly [RegExp, string])[]): string {
  let out = text;
  for (const [pattern, replacement] of table) {
    if (!new RegExp(pattern.source, pattern.flags.replace('g', '')).test(out)) throw new Error(`docs/forward-auth/${file} no longer contains ${pattern}`);
    out = out.replace(pattern, replacement);
  }
  return out;
}

/** Starts a proxy process and waits until its port accepts connections. */
async function startProcess(command: string, args: string[], port: number, env: NodeJS.ProcessEnv = process.env): Promise<{ child: ChildProcess; output: () => string; stop: () => Promise<void> }> {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  let exited = false;
  const exit = new Promise<void>((resolve) => child.on('exit', () => ((exited = true), resolve())));
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (exited) throw new Error(`${command} exited at start:\n${output}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${command} did not listen on ${port}:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    output: () => output,
    stop: async () => {
      if (!exited) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exit;
        clearTimeout(timer);
      }
    },
  };
}

/** nginx with docs/forward-auth/nginx.conf, on plain HTTP, everything it writes inside `dir`. */
function nginxConfig(dir: string): string {
  const doc = substitute('nginx.conf', readFileSync(new URL('nginx.conf', DOCS), 'utf8'), [
    [/^\s*ssl_\w+\s[^\n]*;\n/gm, ''],
    [/^\s*proxy_ssl_\w+\s[^\n]*;\n/gm, ''],
    [/listen 443 ssl default_server;/g, `listen 127.0.0.1:${nginxPort} default_server;`],
    [/listen 443 ssl;/g, `listen 127.0.0.1:${nginxPort};`],
    [/server_name app\.example\.com;/g, 'server_name app.localhost;'],
    [/https:\/\/app\.example\.com\$request_uri/g, `http://app.localhost:${nginxPort}$request_uri`],
    [/server svc\.internal:443;/g, `server 127.0.0.1:${w.port};`],
    [/proxy_pass https:\/\/svc/g, 'proxy_pass http://svc'],
    [/server app\.internal:8080;/g, `server 127.0.0.1:${w.upstream.port};`],
    [/fwd\.example\.com/g, `fwd.localhost:${w.port}`],
    [/app\.example\.com/g, `app.localhost:${nginxPort}`],
  ]);
  return [
    'master_process off;',
    `pid ${dir}/nginx.pid;`,
    'error_log stderr warn;',
    'events { worker_connections 128; }',
    'http {',
    '  access_log off;',
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${dir}/${t};`),
    doc,
    '}',
    '',
  ].join('\n');
}

/** Caddy with docs/forward-auth/Caddyfile, on plain HTTP on loopback, storage inside `dir`. */
function caddyConfig(dir: string): string {
  const doc = substitute('Caddyfile', readFileSync(new URL('Caddyfile', DOCS), 'utf8'), [
    [/^\s*transport http \{\n\s*tls_server_name \S+\n\s*\}\n/gm, ''],
    [/^app\.example\.com \{/gm, `http://app.localhost:${caddyPort} {`],
    [/https%3A%2F%2Fapp\.example\.com\{uri\}/g, `http%3A%2F%2Fapp.localhost:${caddyPort}{uri}`],
    [/https:\/\/svc\.internal:443/g, `http://127.0.0.1:${w.port}`],
    [/app\.internal:8080/g, `127.0.0.1:${w.upstream.port}`],
    [/fwd\.example\.com/g, `fwd.localhost:${w.port}`],
    [/app\.example\.com/g, `app.localhost:${caddyPort}`],
  ]);
  return ['{', '\tadmin off', '\tauto_https off', '\tdefault_bind 127.0.0.1', `\tstorage file_system ${dir}/storage`, '}', '', doc].join('\n');
}

/**
 * The behaviour both proxies must show, with the proxy on `port`. `refused`: what the proxy answers
 * when svc answers 400 (nginx's auth_request turns any status but 2xx/401/403 into 500).
 */
function proxyBehaviour(port: () => number, refused: number): void {
  const app = () => `http://app.localhost:${port()}`;
  const browser = () => browserVia(port(), port());

  it('anonymous browser → sign in → alice lands on the upstream with a verified identity', async () => {
    const b = browser();
    b.setCookie('app.localhost', 'theme', 'dark');
    const first = await b.request(`${app()}/hello?q=1`);
    expect(first.status).toBe(302);
    const signIn = new URL(String(first.headers['location']));
    expect(`${signIn.origin}${signIn.pathname}`).toBe(`${w.origin('authenticate')}/.svc/sign_in`);
    expect(signIn.searchParams.get('svc_redirect_uri')).toBe(`${app()}/hello?q=1`);
    expect(signIn.searchParams.get('svc_signature')).toMatch(/./);

    const hops = await b.signIn(`${app()}/hello?q=1`, 'alice@example.com');
    // The hand-off went through the proxy's `/.svc/` route to svc, which set the cookie for this host.
    expect(hops.some((h) => h.url.startsWith(`${app()}/.svc/callback?`) && h.status === 302)).toBe(true);
    expect(b.cookies('app.localhost')['_svc']).toMatch(/./);
    const end = last(hops);
    expect(end.status).toBe(200);
    expect(end.url).toBe(`${app()}/hello?q=1`);
    const got = echoed(end);
    expect(got.url).toBe('/hello?q=1');
    expect(got.headers['x-svc-claim-email']).toBe('alice@example.com');
    expect(got.headers['x-svc-claim-groups']).toBe('admins,staff');
    const { payload } = await jwtVerify(got.headers['x-svc-jwt-assertion']!, createLocalJWKSet(jwks), { audience: `app.localhost:${port()}`, issuer: `authenticate.localhost:${w.port}` });
    expect(payload).toMatchObject({ sub: 'alice', email: 'alice@example.com', aud: `app.localhost:${port()}` });
    // The config strips svc's session cookie (a credential for every svc route) and keeps the app's own.
    expect(got.headers['cookie']).toBe('theme=dark');

    // Signed in: the next request passes straight through, the original request byte for byte
    // (`+`, `%20`, `%26`, `&` included: svc decided this very request, not a decoded copy).
    const again = await b.request(`${app()}/a%20b/c+d?q=x+y&r=%26s&uri=t`);
    expect(again.status).toBe(200);
    expect(echoed(again).url).toBe('/a%20b/c+d?q=x+y&r=%26s&uri=t');
    expect(echoed(again).headers['x-svc-claim-email']).toBe('alice@example.com');
  });

  it('bob (other.example) is denied: 403 through the proxy', async () => {
    const b = browser();
    const end = last(await b.signIn(`${app()}/`, 'bob@other.example'));
    expect(end.url).toBe(`${app()}/`);
    expect(end.status).toBe(403);
    expect(end.body).not.toContain('"headers"');
  });

  it('an API client without a session gets the sign-in redirect from the proxy too, never the upstream', async () => {
    const r = await browser().request(`${app()}/api`, { headers: { accept: 'application/json' } });
    expect(r.status).toBe(302);
    expect(String(r.headers['location'])).toContain(`${w.origin('authenticate')}/.svc/sign_in?`);
  });

  it('identity headers the client sends itself never reach the upstream as its values (S16)', async () => {
    // `x_svc_claim_email`: the spelling some frameworks read as `x-svc-claim-email` (CGI-style names).
    const forged = { 'x-svc-jwt-assertion': 'forged.jwt.value', 'x-svc-claim-email': 'mallory@example.com', 'x-svc-claim-groups': 'admins', x_svc_claim_email: 'mallory@example.com' };
    // Anonymous, on the public part: svc answers 200 without any identity; the forged values go.
    const pub = await browser().request(`${app()}/public/x`, { headers: forged });
    expect(pub.status).toBe(200);
    for (const h of Object.keys(forged)) expect(echoed(pub).headers[h] ?? '').toBe('');
    // Signed in: svc's values replace them.
    const b = browser();
    await b.signIn(`${app()}/`, 'alice@example.com');
    const mine = echoed(await b.request(`${app()}/y`, { headers: forged })).headers;
    expect(mine['x-svc-claim-email']).toBe('alice@example.com');
    expect(mine['x-svc-claim-groups']).toBe('admins,staff');
    expect(mine['x_svc_claim_email']).toBeUndefined();
    expect(mine['x-svc-jwt-assertion']).not.toBe('forged.jwt.value');
    await jwtVerify(mine['x-svc-jwt-assertion']!, createLocalJWKSet(jwks), { audience: `app.localhost:${port()}` });
  });

  it('a path svc refuses never reaches the upstream, even where the route is public (S07, S12)', async () => {
    // `/public%3F/../x` decoded once more would be `/public?/../x`, on the public route; svc decides
    // the raw form, which has an encoded `?` in the path: refused (400), and the proxy fails closed.
    const r = await rawRequest(port(), [`GET /public%3F/../x HTTP/1.1`, `Host: app.localhost:${port()}`]);
    expect(r.status).toBe(refused);
    expect(r.body).not.toContain('"headers"');
  });

  it('a broken request line never reaches the upstream, even with a valid session (S12)', async () => {
    const b = browser();
    await b.signIn(`${app()}/`, 'alice@example.com');
    const cookie = `Cookie: _svc=${b.cookies('app.localhost')['_svc']}`;
    expect((await rawRequest(port(), ['GET /ok HTTP/1.1', `Host: app.localhost:${port()}`, cookie])).status).toBe(200);
    // The proxy refuses white space itself (400); a raw `#` reaches svc, which refuses it.
    for (const [target, status] of [['/x y', 400], ['/x?a=b c', 400], ['/x\ty', 400], ['/x#y', refused]] as const) {
      const r = await rawRequest(port(), [`GET ${target} HTTP/1.1`, `Host: app.localhost:${port()}`, cookie]);
      expect(r.status, target).toBe(status);
      expect(r.body, target).not.toContain('"headers"');
    }
  });

  it('programmatic login through the proxy: the bearer token is decided by svc and kept from the upstream', async () => {
    const b = browser();
    const login = await b.request(`${app()}/.svc/api/v1/login?svc_redirect_uri=${encodeURIComponent('http://127.0.0.1:9/callback')}`);
    expect(login.status).toBe(200);
    // The sign-in ends with a redirect to the (unrouted) local callback, carrying the token.
    const callback = new URL(String(last(await b.signIn(login.body.trim(), 'alice@example.com')).headers['location']));
    expect(`${callback.origin}${callback.pathname}`).toBe('http://127.0.0.1:9/callback');
    const token = callback.searchParams.get('svc_jwt')!;
    expect(token).toMatch(/^svc1\./);
    const api = await browser().request(`${app()}/api/things`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
    expect(api.status).toBe(200);
    expect(echoed(api).headers['authorization']).toBeUndefined();
    expect(echoed(api).headers['x-svc-claim-email']).toBe('alice@example.com');
    // Another credential in Authorization is the application's own: passed on.
    const basic = await browser().request(`${app()}/public/y`, { headers: { authorization: 'Basic YTpi' } });
    expect(echoed(basic).headers['authorization']).toBe('Basic YTpi');
  });

  it('a request naming another route\'s host never reaches the application: the check is bound to the site', async () => {
    const other = `public.localhost:${port()}`;
    // The premise: svc allows that host anonymously, so a check asked for it would answer 200.
    expect((await rawRequest(w.port, [`GET /verify?uri=http://${other}/x HTTP/1.1`, `Host: fwd.localhost:${w.port}`])).status).toBe(200);
    const attempts = [
      ['GET /x HTTP/1.1', `Host: ${other}`],
      ['GET /public/x HTTP/1.1', `Host: ${other}`],
      ['GET /x HTTP/1.1', `Host: PUBLIC.localhost:${port()}`],
      // The absolute form names the host in the request line, which wins over the Host header.
      [`GET http://${other}/x HTTP/1.1`, `Host: app.localhost:${port()}`],
      ['GET /x HTTP/1.1', 'Host: unknown.localhost'],
    ];
    for (const lines of attempts) {
      const r = await rawRequest(port(), lines);
      expect(r.body, lines.join(' | ')).not.toContain('"headers"');
      expect([200, 421], lines.join(' | ')).toContain(r.status);
      // nginx: the default server refuses (421); Caddy: no site matches, an empty answer.
      if (r.status === 200) expect(r.body, lines.join(' | ')).toBe('');
    }
    // The same request with the application's Host is decided for the application: sign in first.
    expect((await rawRequest(port(), ['GET /x HTTP/1.1', `Host: app.localhost:${port()}`])).status).toBe(302);
  });

  it('no copy of svc\'s session cookie reaches the application, however many the browser sends', async () => {
    const b = browser();
    await b.signIn(`${app()}/`, 'alice@example.com');
    const s = b.cookies('app.localhost')['_svc']!;
    const names = (cookie: string | undefined) => (cookie ?? '').split(';').map((p) => p.trim().split('=')[0]).filter((n) => n !== '');
    for (const cookie of [
      `_svc=${s}`,
      `app=1; _svc=${s}; b=2; _svc=${s}`, // a host-only and a Domain cookie
      `_svc=${s}; app=1; _svc=${s}; b=2`,
      `app=1; _svc=${s}; b=2; _svc=${s}; _svc=${s}`,
      `_svc=${s};_svc=${s}; app=1;b=2;  _svc=${s}`,
    ]) {
      const r = await browser().request(`${app()}/c`, { headers: { cookie } });
      expect(r.status, cookie).toBe(200);
      const got = echoed(r).headers['cookie'];
      expect(got ?? '', cookie).not.toContain(s);
      expect(names(got), cookie).toEqual(cookie.includes('app=1') ? ['app', 'b'] : []);
    }
    // Two Cookie header lines, each with a copy.
    const two = await rawRequest(port(), ['GET /c HTTP/1.1', `Host: app.localhost:${port()}`, `Cookie: app=1; _svc=${s}`, `Cookie: _svc=${s}; b=2`]);
    expect(two.status).toBe(200);
    expect(two.body).toContain('"headers"');
    expect(two.body).not.toContain(s);
    // More copies than a configuration removes are refused, or removed too: never forwarded.
    const many = await browser().request(`${app()}/c`, { headers: { cookie: Array.from({ length: 6 }, (_, i) => `_svc=${s}; c${i}=1`).join('; ') } });
    expect([200, 400]).toContain(many.status);
    expect(many.body).not.toContain(s);
    if (many.status === 200) expect(names(echoed(many).headers['cookie'])).toEqual(['c0', 'c1', 'c2', 'c3', 'c4', 'c5']);
  });

  it('/.svc/ on the application host is svc\'s own (the user info page), not the upstream\'s', async () => {
    // svc answers `/.svc/…` itself (here: the user info page asks an anonymous browser to sign in).
    const r = await browser().request(`${app()}/.svc/`);
    expect(r.status).toBe(302);
    expect(String(r.headers['location'])).toContain(`${w.origin('authenticate')}/.svc/sign_in?`);
  });
}

// ---------------------------------------------------------------------------------------------

describeWithCommands(['nginx'], 'nginx auth_request in front of an upstream, svc deciding (docs/forward-auth/nginx.conf)', () => {
  let dir: string;
  let nginx: Awaited<ReturnType<typeof startProcess>> | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-nginx-'));
    const conf = join(dir, 'nginx.conf');
    writeFileSync(conf, nginxConfig(dir));
    nginx = await startProcess(which('nginx')!, ['-p', dir, '-c', conf, '-g', 'daemon off;'], nginxPort);
  });
  afterAll(async () => {
    await nginx?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  proxyBehaviour(() => nginxPort, 500);
});

describeWithCommands(['caddy'], 'Caddy forward_auth in front of an upstream, svc deciding (docs/forward-auth/Caddyfile)', () => {
  let dir: string;
  let caddy: Awaited<ReturnType<typeof startProcess>> | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-caddy-'));
    const file = join(dir, 'Caddyfile');
    writeFileSync(file, caddyConfig(dir));
    // HOME and XDG dirs inside the temp dir: Caddy writes nothing outside it.
    const env = { ...process.env, HOME: dir, XDG_DATA_HOME: join(dir, 'data'), XDG_CONFIG_HOME: join(dir, 'config') };
    caddy = await startProcess(which('caddy')!, ['run', '--config', file, '--adapter', 'caddyfile'], caddyPort, env);
  });
  afterAll(async () => {
    await caddy?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  proxyBehaviour(() => caddyPort, 400);

  it('a denied request gets svc\'s own 403 answer (Caddy passes it on)', async () => {
    const b = browserVia(caddyPort, caddyPort);
    await b.signIn(`http://app.localhost:${caddyPort}/`, 'bob@other.example');
    const r = await b.request(`http://app.localhost:${caddyPort}/z`, { headers: { accept: 'application/json' } });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body)).toMatchObject({ status: 403 });
  });
});

// ---------------------------------------------------------------------------------------------

describe('svc forward-auth endpoints, called directly', () => {
  // The proxy's view of the user: the route host `app.localhost:<nginxPort>` reaches svc itself here.
  const appUrl = () => `http://app.localhost:${nginxPort}`;
  const fwd = (path: string, headers: string[] = []) => rawRequest(w.port, [`GET ${path} HTTP/1.1`, `Host: fwd.localhost:${w.port}`, 'Accept: text/html', ...headers]);
  let aliceCookie: string;
  let bobCookie: string;

  beforeAll(async () => {
    const cookieOf = async (login: string): Promise<string> => {
      const b = browserVia(nginxPort, w.port);
      // A proxy passes this answer to the browser on the application's host: so does this test with
      // its binding cookie (the hand-off opens only in the browser that started the sign-in).
      const start = await b.request(`${w.origin('fwd')}/?uri=${encodeURIComponent(`${appUrl()}/`)}`);
      for (const c of [start.headers['set-cookie'] ?? []].flat()) {
        const [pair = ''] = c.split(';');
        b.setCookie('app.localhost', pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1));
      }
      const end = last(await b.signIn(String(start.headers['location']), login));
      expect(end.url).toBe(`${appUrl()}/`);
      return `_svc=${b.cookies('app.localhost')['_svc']}`;
    };
    aliceCookie = await cookieOf('alice@example.com');
    bobCookie = await cookieOf('bob@other.example');
  });

  it('/verify, anonymous: 401 and no Location (never a redirect)', async () => {
    for (const uri of [`${appUrl()}/x`, encodeURIComponent(`${appUrl()}/x`)]) {
      const r = await fwd(`/verify?uri=${uri}`);
      expect(r.status).toBe(401);
      expect(r.head.toLowerCase()).not.toContain('\r\nlocation:');
    }
  });

  it('/, anonymous: 302 to the signed sign-in URL on the authenticate service', async () => {
    const r = await fwd(`/?uri=${appUrl()}/x?y=1`);
    expect(r.status).toBe(302);
    const location = new URL(/\r\nlocation: ([^\r\n]+)/i.exec(r.head)![1]!);
    expect(`${location.origin}${location.pathname}`).toBe(`${w.origin('authenticate')}/.svc/sign_in`);
    expect(location.searchParams.get('svc_redirect_uri')).toBe(`${appUrl()}/x?y=1`);
    expect(location.searchParams.get('svc_signature')).toMatch(/./);
    // Asked without HTML in Accept (as Caddy may ask), `/` still sends the browser to sign in.
    const api = await rawRequest(w.port, [`GET /?uri=${appUrl()}/x HTTP/1.1`, `Host: fwd.localhost:${w.port}`, 'Accept: application/json']);
    expect(api.status).toBe(302);
  });

  it('signed-in alice: 200 with the assertion and claim headers, raw and encoded uri alike', async () => {
    for (const uri of [`${appUrl()}/a+b?c=d&e=%2Bf`, encodeURIComponent(`${appUrl()}/a+b?c=d&e=%2Bf`)]) {
      const r = await fwd(`/verify?uri=${uri}`, [`Cookie: ${aliceCookie}`, 'X-Forwarded-Method: POST']);
      expect(r.status, uri).toBe(200);
      expect(r.head).toMatch(/\r\nx-svc-claim-email: alice@example\.com\r\n/i);
      expect(r.head).toMatch(/\r\nx-svc-claim-groups: admins,staff\r\n/i);
      const jwt = /\r\nx-svc-jwt-assertion: ([^\r\n]+)/i.exec(r.head)?.[1];
      const { payload } = await jwtVerify(jwt!, createLocalJWKSet(jwks), { audience: `app.localhost:${nginxPort}` });
      expect(payload['email']).toBe('alice@example.com');
    }
    expect((await fwd(`/?uri=${appUrl()}/x`, [`Cookie: ${aliceCookie}`])).status).toBe(200);
  });

  it('signed-in bob: 403 on both endpoints', async () => {
    expect((await fwd(`/verify?uri=${appUrl()}/x`, [`Cookie: ${bobCookie}`])).status).toBe(403);
    expect((await fwd(`/?uri=${appUrl()}/x`, [`Cookie: ${bobCookie}`])).status).toBe(403);
  });

  it('an answer a route decided names that route in x-svc-route-host, for the proxy to compare with its site', async () => {
    const routeHost = (r: { head: string }) => /\r\nx-svc-route-host: ([^\r\n]+)/i.exec(r.head)?.[1];
    const app = `app.localhost:${nginxPort}`;
    const answers: [Promise<{ status: number; head: string }>, number, string | undefined][] = [
      [fwd(`/verify?uri=${appUrl()}/x`, [`Cookie: ${aliceCookie}`]), 200, app],
      [fwd(`/verify?uri=${encodeURIComponent(`${appUrl()}/public/x`)}`), 200, app],
      [fwd(`/verify?uri=${appUrl()}/x`), 401, app],
      [fwd(`/?uri=${appUrl()}/x`), 302, app],
      [fwd(`/verify?uri=${appUrl()}/x`, [`Cookie: ${bobCookie}`]), 403, app],
      // Another route: a 200 that is no decision about the application.
      [fwd(`/verify?uri=http://public.localhost:${nginxPort}/x`), 200, `public.localhost:${nginxPort}`],
      // No route decided: no route named.
      [fwd('/verify?uri=http://unknown.localhost/x'), 403, undefined],
      [fwd(`/verify?uri=${appUrl()}/.svc/callback`), 403, undefined],
      [fwd(`/verify?uri=${appUrl()}/x%00`), 400, undefined],
    ];
    for (const [answer, status, host] of answers) {
      const r = await answer;
      expect(r.status, r.head).toBe(status);
      expect(routeHost(r), r.head).toBe(host);
    }
  });

  it('S12: a uri that cannot be rebuilt into a request is never 200, even for a signed-in user', async () => {
    const enc = encodeURIComponent;
    const cases: [string, number][] = [
      ['/verify', 400], // no uri
      ['/verify?uri=', 400],
      ['/verify?uri=http://[', 400],
      [`/verify?uri=${enc('http://[')}`, 400],
      [`/verify?uri=${enc(`${appUrl()}/x#frag`)}`, 400],
      [`/verify?uri=${appUrl()}/x%23frag`, 400], // raw form: an encoded `#` in the path (S07)
      [`/verify?uri=${enc(`${appUrl()}/x`)}&uri=${enc(`${appUrl()}/y`)}`, 400], // two uri params
      [`/verify?a=1&uri=${enc(`${appUrl()}/x`)}&uri=${enc(`${appUrl()}/y`)}`, 400],
      [`/verify?uri=${enc('javascript:alert(1)')}`, 400],
      ['/verify?uri=javascript:alert(1)', 400],
      [`/verify?uri=${enc(`${appUrl()}/a b`)}`, 400], // white space
      [`/verify?uri=${enc(`${appUrl()}/a\tb`)}`, 400],
      [`/verify?uri=${enc(`http://alice@app.localhost:${nginxPort}/x`)}`, 400], // user info
      [`/verify?uri=http://alice@app.localhost:${nginxPort}/x`, 400],
      [`/verify?uri=${enc(`ftp://app.localhost:${nginxPort}/x`)}`, 400],
      [`/verify?uri=${enc(`//app.localhost:${nginxPort}/x`)}`, 400],
      [`/verify?uri=${enc(`${appUrl()}x`)}`, 400], // authority runs into the path
      [`/verify?uri=http://app.localhost%3A${nginxPort}%2Fx`, 400], // Caddy's `{scheme}://{hostport}`: half encoded
      [`/verify?uri=${appUrl()}/public%3F/../x`, 400], // an encoded `?` in the path (S07), not `/public`
      [`/verify?uri=${appUrl()}/x%00`, 400],
      ['/verify?uri=http://unknown.localhost/x', 403], // no route: fail closed
      [`/verify?uri=${enc('http://unknown.localhost/x')}`, 403],
      [`/verify?uri=${appUrl()}/.svc/callback`, 403], // svc's own endpoint: not the upstream's
      [`/verify?uri=${w.origin('authenticate')}/x`, 403],
      [`/verify?uri=${w.origin('fwd')}/verify`, 403],
      ['/nope?uri=http://unknown.localhost/x', 404],
    ];
    for (const [path, status] of cases) {
      for (const cookie of [[], [`Cookie: ${aliceCookie}`]]) {
        const r = await fwd(path, cookie);
        expect(r.status, `${path} ${cookie.length > 0 ? 'alice' : 'anonymous'}`).toBe(status);
      }
      expect((await fwd(path.replace(/^\/verify/, '/'), [`Cookie: ${aliceCookie}`])).status, `/ for ${path}`).not.toBe(200);
    }
    // A target Node's parser refuses (raw white space) never reaches the endpoint at all.
    const broken = await fwd(`/verify?uri=${appUrl()}/a b`, [`Cookie: ${aliceCookie}`]);
    expect(broken.status).toBe(400);
  });

  it('X-Forwarded-Method: the original method is decided; one svc cannot read is refused, not taken for GET', async () => {
    const uri = `${appUrl()}/x`;
    for (const m of ['GET', 'POST', 'DELETE', 'M-SEARCH']) expect((await fwd(`/verify?uri=${uri}`, [`Cookie: ${aliceCookie}`, `X-Forwarded-Method: ${m}`])).status, m).toBe(200);
    for (const m of ['delete', 'GET POST', '']) expect((await fwd(`/verify?uri=${uri}`, [`Cookie: ${aliceCookie}`, `X-Forwarded-Method: ${m}`])).status, JSON.stringify(m)).toBe(400);
    expect((await fwd(`/verify?uri=${uri}`, [`Cookie: ${aliceCookie}`, 'X-Forwarded-Method: GET', 'X-Forwarded-Method: DELETE'])).status).toBe(400);
  });
});
