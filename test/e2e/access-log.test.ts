/**
 * The access line of `svc run` as an operator greps it: host, path without the query,
 * route, status, bytes, upstream, trusted client address, decision and plan; a failed upstream is a
 * warn line; a websocket logs on open and on close with its bytes.
 */
import { request } from 'node:http';
import { connect, createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccessEntry } from '../../runtime/observe/log/access-line.ts';
import { accessLevel, accessLine } from '../../runtime/observe/log/access-line.ts';
import { run, type Running } from '../../runtime/process/run.ts';
import { configDir, startUpstream, type Upstream } from './support.ts';

describe('access lines', () => {
  let up: Upstream;
  let wss: WebSocketServer;
  let svc: Running;
  let echo: TcpServer;
  const lines: AccessEntry[] = [];
  const own: Record<string, unknown>[] = [];
  const cfg = configDir();

  beforeAll(async () => {
    up = await startUpstream((_req, res) => res.end('0123456789'));
    wss = new WebSocketServer({ server: up.server });
    wss.on('connection', (ws) => ws.on('message', (m) => ws.send(`echo:${m.toString()}`)));
    echo = createTcpServer((s) => s.pipe(s));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', () => resolve()));
    cfg.write({ address: '127.0.0.1:8443', xff_num_trusted_hops: 1 }, [
      { name: 'app', from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true, allow_websockets: true },
      { from: 'https://down.example.com', to: 'http://127.0.0.1:9', allow_public_unauthenticated_access: true },
      { name: 'echo', from: 'tcp+https://echo.example.com:7000', to: `tcp://127.0.0.1:${(echo.address() as { port: number }).port}`, allow_public_unauthenticated_access: true },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false, access: (e) => lines.push(e), log: (e) => own.push(e) });
  });
  afterAll(async () => {
    await svc?.close();
    wss?.close();
    echo?.close();
    await up?.close();
    cfg.remove();
  });

  const send = (host: string, path: string, body?: string) =>
    new Promise<{ status: number; id: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: svc.listening.address.port, path, method: body ? 'POST' : 'GET', agent: false, headers: { host, 'x-forwarded-for': '203.0.113.7' } }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, id: String(res.headers['x-request-id']) }));
      });
      req.on('error', reject);
      req.end(body);
    });

  it('names host, path without the query, route, status, bytes, upstream, client, decision and plan', async () => {
    const r = await send('app.example.com', '/a/b?token=s3cret&x=1', 'hello');
    expect(r.status).toBe(200);
    await expect.poll(() => lines.find((l) => l.requestId === r.id)).toBeDefined();
    const line = lines.find((l) => l.requestId === r.id)!;
    expect(line).toMatchObject({ msg: 'request', method: 'POST', host: 'app.example.com', path: '/a/b', route: 'app', status: 200, upstream: `127.0.0.1:${up.port}`, client: '203.0.113.7', decision: 'allow', plan: 1 });
    expect(line.ms).toBeGreaterThanOrEqual(0);
    // Head and body, both ways, as on the connection.
    expect(line.bytesIn).toBeGreaterThan(5);
    expect(line.bytesOut).toBeGreaterThan(10);
    expect(accessLevel(line)).toBe(30);
    expect(JSON.stringify(lines)).not.toContain('s3cret');
  });

  it('no route: the decision says so, without a route; an unreachable upstream is a 502 warn line', async () => {
    const missing = await send('nothing.example.com', '/');
    const down = await send('down.example.com', '/');
    expect([missing.status, down.status]).toEqual([404, 502]);
    await expect.poll(() => lines.filter((l) => l.requestId === missing.id || l.requestId === down.id).length).toBe(2);
    const m = lines.find((l) => l.requestId === missing.id)!;
    expect(m).toMatchObject({ status: 404, decision: 'not_found' });
    expect(m.route).toBeUndefined();
    const d = lines.find((l) => l.requestId === down.id)!;
    expect(d).toMatchObject({ status: 502, route: 1, upstream: '127.0.0.1:9' });
    expect(accessLevel(d)).toBe(40);
    expect(own).toContainEqual(expect.objectContaining({ msg: 'upstream error', requestId: down.id }));
  });

  it('a websocket logs on open and on close, with its bytes and duration', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${svc.listening.address.port}/chat?ticket=zzz`, { headers: { host: 'app.example.com', 'x-forwarded-for': '203.0.113.7' } });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    await expect.poll(() => lines.filter((l) => l.msg === 'upgrade').length).toBe(1);
    const reply = new Promise<string>((resolve) => ws.once('message', (m) => resolve(m.toString())));
    ws.send('hello');
    expect(await reply).toBe('echo:hello');
    ws.close();
    await expect.poll(() => lines.filter((l) => l.msg === 'upgrade').length).toBe(2);
    const [open, close] = lines.filter((l) => l.msg === 'upgrade');
    expect(open).toMatchObject({ event: 'open', status: 101, host: 'app.example.com', path: '/chat', route: 'app', client: '203.0.113.7', decision: 'allow' });
    expect(close).toMatchObject({ event: 'close', status: 101, requestId: open!.requestId });
    expect(close!.bytesIn).toBeGreaterThan(5);
    expect(close!.bytesOut).toBeGreaterThan(10);
  });

  it('a CONNECT tunnel logs on open and on close, with its bytes', async () => {
    const got = await new Promise<string>((resolve, reject) => {
      let text = '';
      const s = connect(svc.listening.address.port, '127.0.0.1', () => s.write('CONNECT echo.example.com:7000 HTTP/1.1\r\nHost: echo.example.com:7000\r\nX-Forwarded-For: 203.0.113.7\r\n\r\n'));
      s.setEncoding('utf8');
      s.on('data', (c: string) => {
        text += c;
        if (text.includes('\r\n\r\n') && !text.includes('ping')) s.write('ping-pong');
        if (text.endsWith('ping-pong')) s.end();
      });
      s.on('close', () => resolve(text));
      s.on('error', reject);
    });
    expect(got).toMatch(/^HTTP\/1\.1 200 /);
    await expect.poll(() => lines.filter((l) => l.msg === 'tunnel').length).toBe(2);
    const [open, close] = lines.filter((l) => l.msg === 'tunnel');
    expect(open).toMatchObject({ event: 'open', method: 'CONNECT', host: 'echo.example.com:7000', path: 'echo.example.com:7000', route: 'echo', status: 200, client: '203.0.113.7', decision: 'allow' });
    expect(close).toMatchObject({ event: 'close', requestId: open!.requestId, bytesIn: 9, bytesOut: 9 });
  });

  it('names the user agent and the referer (its origin only) of requests, upgrades and tunnels; no trace id with tracing off (docs/logging.md)', async () => {
    const r = await new Promise<string>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: svc.listening.address.port, path: '/ua', agent: false, headers: { host: 'app.example.com', 'x-forwarded-for': '203.0.113.7', 'user-agent': 'ua-request/1', referer: 'https://alice:PWsecret@app.example.com/prev?token=Qsecret' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(String(res.headers['x-request-id'])));
      });
      req.on('error', reject);
      req.end();
    });
    const ws = new WebSocket(`ws://127.0.0.1:${svc.listening.address.port}/chat`, { headers: { host: 'app.example.com', 'x-forwarded-for': '203.0.113.7', 'user-agent': 'ua-upgrade/1', referer: 'https://app.example.com/page?x=Qsecret' } });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    ws.close();
    await new Promise<void>((resolve, reject) => {
      const s = connect(svc.listening.address.port, '127.0.0.1', () => s.write('CONNECT echo.example.com:7000 HTTP/1.1\r\nHost: echo.example.com:7000\r\nX-Forwarded-For: 203.0.113.7\r\nUser-Agent: ua-tunnel/1\r\n\r\n'));
      s.once('data', () => s.end());
      s.on('close', () => resolve());
      s.on('error', reject);
    });
    const tunnelRefused = await new Promise<string>((resolve, reject) => {
      let text = '';
      const s = connect(svc.listening.address.port, '127.0.0.1', () => s.write('CONNECT nowhere.example.com:7000 HTTP/1.1\r\nHost: nowhere.example.com:7000\r\nX-Forwarded-For: 203.0.113.7\r\nUser-Agent: ua-refused/1\r\n\r\n'));
      s.setEncoding('utf8');
      s.on('data', (c: string) => (text += c));
      s.on('close', () => resolve(text));
      s.on('error', reject);
    });
    expect(tunnelRefused).toMatch(/^HTTP\/1\.1 4\d\d /);
    const byAgent = (ua: string) => lines.filter((l) => l.userAgent === ua);
    await expect.poll(() => [byAgent('ua-request/1').length, byAgent('ua-upgrade/1').length, byAgent('ua-tunnel/1').length, byAgent('ua-refused/1').length]).toEqual([1, 2, 2, 1]);
    expect(byAgent('ua-request/1')[0]).toMatchObject({ requestId: r, referer: 'https://alice:PWsecret@app.example.com/prev?token=Qsecret' });
    expect(byAgent('ua-upgrade/1').map((l) => l.event)).toEqual(['open', 'close']);
    expect(byAgent('ua-upgrade/1')[0]!.referer).toBe('https://app.example.com/page?x=Qsecret');
    expect(byAgent('ua-tunnel/1').map((l) => l.event)).toEqual(['open', 'close']);
    expect(byAgent('ua-refused/1')[0]!.event).toBeUndefined();
    // The entries carry the header as sent; the line written from them drops userinfo and query.
    const written = accessLine(byAgent('ua-request/1')[0]!, 0);
    expect(JSON.parse(written)).toMatchObject({ userAgent: 'ua-request/1', referer: 'https://app.example.com' });
    expect(written).not.toMatch(/PWsecret|Qsecret|alice/);
    expect(lines.every((l) => l.traceId === undefined)).toBe(true);
  });
});
