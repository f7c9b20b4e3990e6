/**
 * Websocket upgrades through svc with a real websocket server and client (`ws`): allowed only on
 * routes with `allow_websockets`, only after authorization; `Upgrade: h2c` never forwarded (S20).
 */
import { connect } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { configDir, startUpstream, type Upstream } from './support.ts';

describe('svc run: websocket upgrades', () => {
  let up: Upstream;
  let wss: WebSocketServer;
  let svc: Running;
  const seenPaths: string[] = [];
  const seenCookies: (string | undefined)[] = [];
  const cfg = configDir();

  beforeAll(async () => {
    up = await startUpstream((_req, res) => res.end('plain'));
    wss = new WebSocketServer({ server: up.server });
    wss.on('connection', (ws, req) => {
      seenPaths.push(`${req.url} host=${req.headers.host} id=${req.headers['x-svc-jwt-assertion'] ?? '-'}`);
      seenCookies.push(req.headers.cookie);
      ws.on('message', (m) => ws.send(`echo:${m.toString()}`));
    });
    cfg.write({ address: '127.0.0.1:8443' }, [
      { from: 'https://ws.example.com', to: `${up.url}/socket/`, allow_websockets: true, allow_public_unauthenticated_access: true, timeout: '0s', idle_timeout: '10s' },
      { from: 'https://nows.example.com', to: up.url, allow_public_unauthenticated_access: true },
      { from: 'https://private.example.com', to: up.url, allow_websockets: true, policy: 'allow if domain is "example.com"' },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    wss?.close();
    await up?.close();
    cfg.remove();
  });

  const open = (host: string, path = '/chat', extra: Record<string, string> = {}) =>
    new Promise<{ ws: WebSocket; status?: number }>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${svc.listening.address.port}${path}`, { headers: { host, 'x-svc-jwt-assertion': 'forged', ...extra } });
      ws.once('open', () => resolve({ ws }));
      ws.once('unexpected-response', (_req, res) => resolve({ ws, status: res.statusCode ?? 0 }));
      ws.once('error', () => resolve({ ws, status: -1 }));
    });

  it('tunnels a websocket on a route that allows it, on the rewritten path, without client identity headers', async () => {
    const { ws, status } = await open('ws.example.com');
    expect(status).toBeUndefined();
    const reply = new Promise<string>((resolve) => ws.once('message', (m) => resolve(m.toString())));
    ws.send('hello');
    expect(await reply).toBe('echo:hello');
    ws.close();
    expect(seenPaths).toContain(`/socket/chat host=127.0.0.1:${up.port} id=-`);
  });

  it("keeps svc's session cookie from the upstream, and sends no Cookie header when nothing else is left", async () => {
    seenCookies.length = 0;
    for (const cookie of ['_svc=not-a-session; app=1', '_svc=not-a-session']) {
      const { ws, status } = await open('ws.example.com', '/chat', { cookie });
      expect(status).toBeUndefined();
      ws.close();
    }
    await expect.poll(() => seenCookies.length).toBe(2);
    expect(seenCookies).toEqual(['app=1', undefined]);
  });

  it('refuses an upgrade on a route without allow_websockets, and before authorization', async () => {
    expect((await open('nows.example.com')).status).toBe(400);
    expect((await open('private.example.com')).status).toBe(401);
    expect((await open('unknown.example.com')).status).toBe(404);
  });

  it('never forwards h2c upgrades (S20)', async () => {
    const answer = await new Promise<string>((resolve) => {
      const s = connect(svc.listening.address.port, '127.0.0.1', () =>
        s.write('GET / HTTP/1.1\r\nHost: ws.example.com\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n'),
      );
      let out = '';
      s.on('data', (c) => (out += c.toString()));
      s.on('close', () => resolve(out));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('upgrade-not-enabled:h2c');
  });
});
