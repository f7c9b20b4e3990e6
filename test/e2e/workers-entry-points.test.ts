/**
 * With `--workers`, the primary accepts every connection and hands it to a worker (runtime/process/cluster.ts):
 * each way in still reaches a worker's one gate. Over TLS with `codec_type: auto`, through two workers:
 * an HTTP/1.1 request, an HTTP/2 request, a WebSocket upgrade and a CONNECT to a TCP route are served,
 * and the same with more than 1,000 header fields is refused with 431 by the gate on every one of them.
 */
import { connect as h2connect } from 'node:http2';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { issue, makeCa } from '../runtime/tls/pki.ts';
import { spawnSvc, type SignalledSvc } from './svc-process.ts';
import { configDir, startUpstream, tlsExchange, type Upstream } from './support.ts';

const fields = (n: number) => Array.from({ length: n }, (_, i) => `x-f${i}: 1\r\n`).join('');

describe('--workers 2: every way in is handed to a worker and meets its gate', () => {
  const cfg = configDir();
  let up: Upstream;
  let wss: WebSocketServer;
  let tcp: TcpServer;
  let svc: SignalledSvc;

  const raw = (head: string, then?: string) => tlsExchange(svc.port, head, then);

  /** One HTTP/2 GET with `extra` headers; resolves with its status (0 when reset). */
  const h2 = (extra: Record<string, string>) =>
    new Promise<number>((resolve) => {
      const session = h2connect(`https://127.0.0.1:${svc.port}`, { servername: 'app.example.com', rejectUnauthorized: false });
      const stream = session.request({ ':method': 'GET', ':scheme': 'https', ':authority': 'app.example.com', ':path': '/h2', ...extra }, { endStream: true });
      let status = 0;
      stream.on('response', (h) => (status = Number(h[':status'])));
      stream.resume();
      stream.on('close', () => {
        session.close();
        resolve(status);
      });
      stream.on('error', () => undefined);
      session.on('error', () => resolve(0));
    });

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      req.resume();
      res.end('ok');
    });
    wss = new WebSocketServer({ server: up.server });
    wss.on('connection', (ws) => ws.on('message', (m) => ws.send(`echo ${m.toString()}`)));
    tcp = createTcpServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    const ca = await makeCa('svc test CA (TEST ONLY)');
    const cert = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com', 'echo.example.com'], usage: 'server' });
    cfg.writeTls(cert, { codec_type: 'auto' }, [
      { from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true, allow_websockets: true },
      { from: 'tcp+https://echo.example.com:7000', to: `tcp://127.0.0.1:${(tcp.address() as { port: number }).port}`, allow_public_unauthenticated_access: true },
    ]);
    svc = await spawnSvc(cfg.path, ['--workers', '2', '--shutdown-delay', '0']);
  }, 60_000);

  afterAll(async () => {
    if (svc && svc.child.exitCode === null) {
      svc.child.kill('SIGTERM');
      await svc.exited;
    }
    wss?.close();
    await up?.close();
    tcp?.close();
    cfg.remove();
  });

  it('HTTP/1.1: served; 1,001 fields: 431', async () => {
    for (let i = 0; i < 4; i++) expect(await raw('GET /h1 HTTP/1.1\r\nHost: app.example.com\r\nConnection: close\r\n\r\n')).toMatch(/^HTTP\/1\.1 200 /);
    expect(await raw(`GET /h1 HTTP/1.1\r\nHost: app.example.com\r\n${fields(1000)}\r\n`)).toMatch(/^HTTP\/1\.1 431 /);
  });

  it('HTTP/2: served; 1,001 fields: 431', async () => {
    for (let i = 0; i < 4; i++) expect(await h2({})).toBe(200);
    expect(await h2(Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`x-f${i}`, '1'])))).toBe(431);
  });

  it('WebSocket upgrade: echoed; 1,001 fields: 431', async () => {
    // `servername` reaches the TLS connection (ws passes its options to https.request), though ws's types omit it.
    const sni: object = { servername: 'app.example.com' };
    const ws = new WebSocket(`wss://127.0.0.1:${svc.port}/ws`, { headers: { host: 'app.example.com' }, rejectUnauthorized: false, ...sni });
    const echoed = await new Promise<string>((resolve, reject) => {
      ws.on('open', () => ws.send('hello'));
      ws.on('message', (m) => resolve(m.toString()));
      ws.on('error', reject);
    });
    ws.close();
    expect(echoed).toBe('echo hello');
    const upgrade = 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
    expect(await raw(`GET /ws HTTP/1.1\r\nHost: app.example.com\r\n${upgrade}${fields(1000)}\r\n`)).toMatch(/^HTTP\/1\.1 431 /);
  });

  it('CONNECT to a TCP route: tunnelled; 1,001 fields: 431', async () => {
    const answer = await raw('CONNECT echo.example.com:7000 HTTP/1.1\r\nHost: echo.example.com:7000\r\n\r\n', 'ping-through-the-tunnel');
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('ping-through-the-tunnel');
    expect(await raw(`CONNECT echo.example.com:7000 HTTP/1.1\r\nHost: echo.example.com:7000\r\n${fields(1000)}\r\n`)).toMatch(/^HTTP\/1\.1 431 /);
  });
});
