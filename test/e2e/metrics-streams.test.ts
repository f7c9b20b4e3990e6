/**
 * Websocket upgrades and CONNECT tunnels count in `svc_http_server_requests_total` like requests:
 * by route, with the status svc answered (101 → 1xx, an open tunnel 200 → 2xx, a refusal's status),
 * recorded once the client connection closes.
 */
import { createServer as createTcpServer, connect, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { run, type Running } from '../../runtime/process/run.ts';
import { freePort, sample, scrape } from './metrics-support.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

describe('upgrades and tunnels in the metrics', () => {
  let up: Upstream;
  let wss: WebSocketServer;
  let tcp: Server;
  let svc: Running;
  let metricsPort = 0;
  const cfg = configDir();

  beforeAll(async () => {
    up = await startUpstream(echo);
    wss = new WebSocketServer({ server: up.server });
    wss.on('connection', (ws) => ws.on('message', (m) => ws.send(m)));
    tcp = createTcpServer((s) => s.pipe(s));
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', () => resolve()));
    metricsPort = await freePort();
    cfg.write({ address: '127.0.0.1:8443', metrics_address: `127.0.0.1:${metricsPort}` }, [
      { from: 'https://ws.example.com', to: up.url, allow_public_unauthenticated_access: true, allow_websockets: true, name: 'ws' },
      { from: 'tcp+https://echo.example.com:7000', to: `tcp://127.0.0.1:${(tcp.address() as { port: number }).port}`, allow_public_unauthenticated_access: true, name: 'echo' },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    wss?.close();
    tcp?.close();
    await up?.close();
    cfg.remove();
  });

  const count = async (labels: Record<string, string>) => sample((await scrape(metricsPort)).body, 'svc_http_server_requests_total', labels) ?? 0;

  it('a websocket session counts once, as 1xx, when it closes', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${svc.listening.address.port}/chat`, { headers: { host: 'ws.example.com' } });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => ws.send('hi'));
      ws.once('message', () => ws.close());
      ws.once('close', () => resolve());
      ws.once('error', reject);
    });
    await expect.poll(() => count({ route: 'ws', method: 'GET', status_class: '1xx' }), { timeout: 10_000 }).toBe(1);
  });

  it('a tunnel counts as 2xx once it closes; CONNECT to no route as (none) 4xx', async () => {
    const tunnel = (authority: string) =>
      new Promise<string>((resolve) => {
        const s = connect(svc.listening.address.port, '127.0.0.1', () => s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`));
        let out = '';
        s.on('data', (c: Buffer) => {
          out += c.toString();
          if (out.includes('\r\n\r\n') && out.startsWith('HTTP/1.1 200')) {
            if (!out.includes('ping')) s.write('ping');
            else s.end();
          }
        });
        s.on('close', () => resolve(out));
      });
    expect(await tunnel('echo.example.com:7000')).toMatch(/^HTTP\/1\.1 200[\s\S]*ping$/);
    expect(await tunnel('nowhere.example.com:7000')).toMatch(/^HTTP\/1\.1 404/);
    await expect.poll(() => count({ route: 'echo', method: 'CONNECT', status_class: '2xx' }), { timeout: 10_000 }).toBe(1);
    await expect.poll(() => count({ route: '(none)', method: 'CONNECT', status_class: '4xx' }), { timeout: 10_000 }).toBe(1);
  });
});
