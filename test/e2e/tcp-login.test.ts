/**
 * `tcp+https` routes with a policy, end to end with real parts on loopback: the OpenID provider
 * (oidc-provider), svc, a real Redis, and a plain TCP server that records every connection. `svc tcp`
 * signs in through programmatic login (the CLI's own login, callback and token store), presents the
 * token on CONNECT (`Proxy-Authorization`), and Redis answers. Without a valid credential for the
 * route the tunnel is refused (401, 403 for a denied user) and nothing reaches the upstream; a token
 * is bound to its route and proxy (docs/security.md S32).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tunnelCredential } from '../../cli/tcp-credential.ts';
import { TcpLoginError } from '../../cli/tcp-login.ts';
import { startTunnel } from '../../cli/tcp-tunnel.ts';
import { loadToken, saveToken, tokenFile } from '../../cli/token-store.ts';
import type { Hop } from '../support/http-browser.ts';
import { sendResp } from '../support/resp.ts';
import { describeWithCommands } from '../support/system.ts';
import { freePort, startAuthWorld, type AuthWorld } from './auth-support.ts';

const REDIS = 'tcp+https://redis.localhost:6379';
const RECORDED = 'tcp+https://recorded.localhost:7000';
const last = (hops: Hop[]): Hop => hops[hops.length - 1]!;

describeWithCommands(['redis-server'], 'tcp+https routes with a policy, signed in through svc tcp', () => {
  let w: AuthWorld;
  let redisProcess: ChildProcess;
  let recorder: Server;
  let recorded = 0;
  const servers: Server[] = [];
  const dirs: string[] = [];
  const proxy = () => new URL(`http://127.0.0.1:${w.port}`);
  const tokenDir = () => {
    const d = join(mkdtempSync(join(tmpdir(), 'svc-tcp-tokens-')), 'svc', 'tokens');
    dirs.push(d);
    return d;
  };

  beforeAll(async () => {
    const redisPort = await freePort();
    redisProcess = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    for (let i = 0; i < 100 && (await sendResp(redisPort, 'PING\r\n')) !== '+PONG\r\n'; i++) await new Promise((r) => setTimeout(r, 100));
    recorder = createServer((s) => {
      recorded++;
      s.destroy();
    });
    await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', () => resolve()));
    const recorderPort = (recorder.address() as { port: number }).port;
    w = await startAuthWorld({
      routes: [
        { name: 'redis', from: REDIS, to: `tcp://127.0.0.1:${redisPort}`, policy: 'allow if domain is "example.com"' },
        { name: 'recorded', from: RECORDED, to: `tcp://127.0.0.1:${recorderPort}`, policy: 'allow if domain is "example.com"' },
        { name: 'app', from: 'https://app.localhost:PORT', to: 'UPSTREAM', allow_any_authenticated_user: true },
      ],
    });
  });

  afterAll(async () => {
    for (const s of servers) s.close();
    await w?.close();
    recorder?.close();
    redisProcess?.kill();
    for (const d of dirs) rmSync(join(d, '..', '..'), { recursive: true, force: true });
  });

  /** Completes a sign-in as the user's browser would: sign in at the IdP, then follow to the CLI's callback. */
  async function browse(url: string, user: string): Promise<void> {
    const hops = await w.browser().signIn(url, user);
    const callback = String(last(hops).headers['location']);
    expect(callback).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/svc-callback\?/);
    // A callback without this login's nonce is refused and does not end the login.
    const forged = new URL(callback);
    forged.searchParams.set('svc_state', 'x'.repeat(43));
    expect((await fetch(forged)).status).toBe(400);
    expect((await fetch(callback)).status).toBe(200);
    // One time: a replay is refused, or finds the listener already gone.
    expect([400, 'closed']).toContain(await fetch(callback).then((r) => r.status, () => 'closed'));
  }

  /** The credential `svc tcp` uses, with the sign-in done by `user` in a test browser. */
  function credential(route: string, user: string, dir: string, presented: string[] = []) {
    return tunnelCredential({
      route,
      proxy: proxy(),
      dir,
      authOrigins: [w.origin('authenticate')],
      present: (url) => {
        presented.push(url);
        void browse(url, user);
      },
    });
  }

  /** A raw CONNECT to svc: its status line. */
  function rawConnect(authority: string, token?: string): Promise<string> {
    return new Promise((resolve) => {
      const s = connect(w.port, '127.0.0.1', () => s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${token === undefined ? '' : `Proxy-Authorization: Bearer ${token}\r\n`}\r\n`));
      let out = '';
      s.on('data', (c) => {
        out += c.toString('latin1');
        if (out.includes('\r\n')) s.destroy();
      });
      s.on('error', () => resolve(out));
      s.on('close', () => resolve(out.split('\r\n')[0] ?? ''));
    });
  }

  async function tunnel(route: string, cred: ReturnType<typeof tunnelCredential> | undefined, errors: string[] = []): Promise<number> {
    const s = await startTunnel({ route, proxy: proxy().href, listen: { host: '127.0.0.1', port: 0 }, ...(cred ? { credential: cred } : {}), onError: (m) => errors.push(m) });
    servers.push(s);
    return (s.address() as { port: number }).port;
  }

  it('alice signs in through svc tcp and reaches Redis; the token is kept 0600 for this route and proxy', async () => {
    const dir = tokenDir();
    const presented: string[] = [];
    const cred = credential(REDIS, 'alice@example.com', dir, presented);
    const token = await cred.current();
    expect(token).toMatch(/^svc1\./);
    expect(presented).toHaveLength(1);
    expect(new URL(presented[0]!).origin).toBe(w.origin('authenticate'));
    const file = tokenFile(dir, REDIS, proxy().origin);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const stored = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    expect(stored).toMatchObject({ route: REDIS, proxy: proxy().origin, token });
    expect(stored['expiresAtMs']).toBeGreaterThan(Date.now());

    const port = await tunnel(REDIS, cred);
    expect(await sendResp(port, 'PING\r\n')).toBe('+PONG\r\n');
    // The stored token is used again: no second sign-in.
    expect(await sendResp(port, 'PING\r\n')).toBe('+PONG\r\n');
    expect(await credential(REDIS, 'alice@example.com', dir, presented).current()).toBe(token);
    expect(presented).toHaveLength(1);
  });

  it('refuses CONNECT without a valid credential (401) and for a denied user (403); nothing reaches the upstream', async () => {
    const before = recorded;
    expect(await rawConnect('recorded.localhost:7000')).toMatch(/^HTTP\/1\.1 401 /);
    expect(await rawConnect('recorded.localhost:7000', 'svc1.not-a-token')).toMatch(/^HTTP\/1\.1 401 /);
    const errors: string[] = [];
    expect(await sendResp(await tunnel(RECORDED, undefined, errors), 'PING\r\n')).toBe('');
    expect(errors.join('\n')).toMatch(/401/);

    const bob = await credential(RECORDED, 'bob@other.example', tokenDir()).current();
    expect(await rawConnect('recorded.localhost:7000', bob)).toMatch(/^HTTP\/1\.1 403 /);
    const alice = await credential(RECORDED, 'alice@example.com', tokenDir()).current();
    expect(await rawConnect('RECORDED.localhost:7000', alice)).toMatch(/^HTTP\/1\.1 200 /);
    expect(recorded).toBe(before + 1); // alice's tunnel alone
  });

  it('a token is bound to its route (S32): another tcp route, an https route and the reverse all refuse it', async () => {
    const before = recorded;
    const forRedis = await credential(REDIS, 'alice@example.com', tokenDir()).current();
    expect(await rawConnect('recorded.localhost:7000', forRedis)).toMatch(/^HTTP\/1\.1 401 /);
    // The tunnel token does not open the https route either, as a bearer token.
    const api = await w.browser().request(`${w.origin('app')}/`, { headers: { authorization: `Bearer ${forRedis}`, accept: 'application/json' } });
    expect(api.status).toBe(401);
    // An https route's programmatic token does not open a tunnel.
    const b = w.browser();
    const loginUrl = await b.request(`${w.origin('app')}/.svc/api/v1/login?svc_redirect_uri=${encodeURIComponent('http://127.0.0.1:9/cb')}`);
    const back = new URL(String(last(await b.signIn(loginUrl.body.trim(), 'alice@example.com')).headers['location']));
    const httpsToken = back.searchParams.get('svc_jwt')!;
    expect((await w.browser().request(`${w.origin('app')}/`, { headers: { authorization: `Bearer ${httpsToken}`, accept: 'application/json' } })).status).toBe(200);
    expect(await rawConnect('recorded.localhost:7000', httpsToken)).toMatch(/^HTTP\/1\.1 401 /);
    expect(recorded).toBe(before);
  });

  it('a token stored for another proxy origin is not used; a refused stored token is replaced by one new sign-in', async () => {
    const dir = tokenDir();
    const good = String(await credential(REDIS, 'alice@example.com', tokenDir()).current());
    expect(good).toMatch(/^svc1\./);
    // Stored for the same route through another proxy: this proxy must not get it, so svc tcp signs in.
    saveToken(dir, { route: REDIS, proxy: 'http://127.0.0.1:1', token: good, expiresAtMs: Date.now() + 3_600_000 });
    const presented: string[] = [];
    expect(await credential(REDIS, 'alice@example.com', dir, presented).current()).not.toBe(good);
    expect(presented).toHaveLength(1);

    // A stored token svc refuses (401): deleted, one sign-in, and the connection goes through.
    saveToken(dir, { route: REDIS, proxy: proxy().origin, token: 'svc1.revoked', expiresAtMs: Date.now() + 3_600_000 });
    const again: string[] = [];
    const port = await tunnel(REDIS, credential(REDIS, 'alice@example.com', dir, again));
    expect(await sendResp(port, 'PING\r\n')).toBe('+PONG\r\n');
    expect(again).toHaveLength(1);
    expect(loadToken(dir, REDIS, proxy().origin, Date.now())?.token).toMatch(/^svc1\.(?!revoked)/);
  });

  it('refuses a sign-in URL on an origin the user did not name (S32)', async () => {
    const cred = tunnelCredential({ route: REDIS, proxy: proxy(), dir: tokenDir(), authOrigins: [], present: () => undefined });
    const e = await cred.current().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(TcpLoginError);
    expect((e as TcpLoginError).code).toBe('SVC_ERR_LOGIN_URL_UNTRUSTED');
    expect((e as Error).message).toContain(`--auth-origin ${w.origin('authenticate')}`);
  });
});
