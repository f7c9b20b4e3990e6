/**
 * Every way into svc passes the same gate (docs/architecture.md §5): a websocket upgrade and a
 * CONNECT tunnel, over HTTP/1.1 and HTTP/2, get the client-certificate check, the load balancer,
 * the upstream TLS settings and the policy a plain request gets; an upgrade relays nothing from the
 * client before the upstream's 101 (upgrade smuggling). Real svc over TLS, real websocket servers
 * (`ws`), raw sockets where a client library would sanitize the attack.
 */
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect as http2Connect } from 'node:http2';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { WebSocket, WebSocketServer, type ClientOptions } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { issue, makeCa, type Issued } from '../runtime/tls/pki.ts';
import { configDir } from '../e2e/support.ts';

const HANDSHAKE = 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';

async function listen<S extends Server | NetServer>(server: S): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return (server.address() as { port: number }).port;
}

/** A websocket server on a plain or TLS HTTP server, recording the paths it accepted. */
function wsUpstream(server: Server, name: string, seen: string[]): WebSocketServer {
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws, req) => {
    seen.push(`${name} ${req.url}`);
    ws.on('message', (m) => ws.send(`${name}:${m.toString()}`));
  });
  return wss;
}

describe('one gate for upgrades and CONNECT', () => {
  const cfg = configDir();
  const seen: string[] = [];
  const smuggleLines: string[] = [];
  const tcpConnections: string[] = [];
  const servers: (Server | NetServer)[] = [];
  const sockets: WebSocketServer[] = [];
  let svc: Running;
  let ca: Issued;
  let client: Issued;
  let port = 0;

  beforeAll(async () => {
    ca = await makeCa('svc gate test CA (TEST ONLY)');
    const clientCa = await makeCa('svc gate client CA (TEST ONLY)');
    client = await issue(clientCa, { cn: 'alice', usage: 'client' });
    const upstreamCa = await makeCa('svc gate upstream CA (TEST ONLY)');
    const upstreamCert = await issue(upstreamCa, { cn: 'upstream.test', dns: ['upstream.test'], usage: 'server' });
    const svcToUpstream = await issue(clientCa, { cn: 'svc', usage: 'client' });
    const hosts = ['mtls', 'lb', 'tlsup', 'smuggle', 'private', 'public'].map((h) => `${h}.example.com`);
    const server = await issue(ca, { cn: 'mtls.example.com', dns: hosts, usage: 'server' });
    const file = cfg.file;

    // Plain websocket upstreams: one behind the mTLS route, two behind the load-balanced route.
    const plain = createHttpServer((_req, res) => res.end('plain'));
    sockets.push(wsUpstream(plain, 'plain', seen));
    const healthy: Record<string, boolean> = { a: false, b: true };
    const lb = ['a', 'b'].map((name) => {
      const s = createHttpServer((req, res) => {
        res.statusCode = req.url === '/health' && !healthy[name] ? 500 : 200;
        res.end(name);
      });
      sockets.push(wsUpstream(s, name, seen));
      return s;
    });
    // An https websocket upstream that trusts only svc's client certificate.
    const secure = createHttpsServer({ cert: upstreamCert.certPem, key: upstreamCert.keyPem, ca: clientCa.certPem, requestCert: true, rejectUnauthorized: true });
    sockets.push(wsUpstream(secure as unknown as Server, 'secure', seen));
    // An upstream that never switches protocols, ignores `Upgrade` and reads every request on a
    // kept-alive connection: what a request smuggled behind an upgrade would reach.
    const smuggle = createNetServer((s) => {
      let buffered = '';
      s.on('data', (c: Buffer) => {
        buffered += c.toString('latin1');
        for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
          const head = buffered.slice(0, end);
          buffered = buffered.slice(end + 4);
          const assertion = /^x-svc-jwt-assertion: (.*)$/im.exec(head)?.[1] ?? '-';
          smuggleLines.push(`${head.split('\r\n')[0]!.split(' ').slice(0, 2).join(' ')} assertion=${assertion}`);
          s.write('HTTP/1.1 200 OK\r\ncontent-length: 15\r\n\r\nnot a websocket');
        }
      });
    });
    // TCP upstreams: one that records connections, one that echoes.
    const recorder = createNetServer((s) => {
      tcpConnections.push('private');
      s.end();
    });
    const echo = createNetServer((s) => s.pipe(s));
    servers.push(plain, ...lb, secure, smuggle, recorder, echo);
    const [plainPort, aPort, bPort, securePort, smugglePort, recorderPort, echoPort] = await Promise.all(servers.map((s) => listen(s)));

    cfg.writeTls(server, { codec_type: 'auto' }, [
      { from: 'https://mtls.example.com', to: `http://127.0.0.1:${plainPort}`, allow_websockets: true, allow_public_unauthenticated_access: true, tls_downstream_client_ca_file: file('client-ca.pem', clientCa.certPem) },
      {
        from: 'https://lb.example.com',
        to: [`http://127.0.0.1:${aPort}`, `http://127.0.0.1:${bPort}`],
        allow_websockets: true,
        allow_public_unauthenticated_access: true,
        health_checks: [{ timeout: '1s', interval: '50ms', unhealthy_threshold: 1, healthy_threshold: 1, http_health_check: { path: '/health' } }],
      },
      {
        from: 'https://tlsup.example.com',
        to: `https://127.0.0.1:${securePort}`,
        allow_websockets: true,
        allow_public_unauthenticated_access: true,
        tls_server_name: 'upstream.test',
        tls_custom_ca_file: file('upstream-ca.pem', upstreamCa.certPem),
        tls_client_cert_file: file('svc-client.pem', svcToUpstream.certPem),
        tls_client_key_file: file('svc-client.key', svcToUpstream.keyPem),
      },
      { from: 'https://smuggle.example.com', to: `http://127.0.0.1:${smugglePort}`, allow_websockets: true, allow_public_unauthenticated_access: true },
      { from: 'tcp+https://private.example.com:7000', to: `tcp://127.0.0.1:${recorderPort}`, policy: 'allow if groups has "ops"' },
      { from: 'tcp+https://public.example.com:7001', to: `tcp://127.0.0.1:${echoPort}`, allow_public_unauthenticated_access: true },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
    port = svc.listening.address.port;
  });

  afterAll(async () => {
    await svc?.close();
    for (const w of sockets) w.close();
    for (const s of servers) {
      if ('closeAllConnections' in s) s.closeAllConnections();
      s.close();
    }
    cfg.remove();
  });

  /** Sends `bytes` on a TLS connection to svc for `host`; resolves with everything svc sent until it closed (or `waitMs`). */
  const raw = (host: string, bytes: string, withCert = false, waitMs = 1500) =>
    new Promise<string>((resolve, reject) => {
      let got = '';
      const s = tlsConnect({ host: '127.0.0.1', port, servername: host, ca: ca.certPem, ALPNProtocols: ['http/1.1'], ...(withCert ? { cert: client.certPem, key: client.keyPem } : {}) }, () => s.write(bytes));
      const t = setTimeout(() => {
        s.destroy();
        resolve(got);
      }, waitMs);
      s.on('data', (c: Buffer) => (got += c.toString('latin1')));
      s.on('close', () => {
        clearTimeout(t);
        resolve(got);
      });
      s.on('error', (e) => (got === '' ? reject(e) : undefined));
    });

  /** Opens a websocket through svc and exchanges one message. */
  const echoOver = (host: string, withCert = false) =>
    new Promise<string>((resolve, reject) => {
      // `servername` reaches tls.connect (SNI for the route's host); ws's types do not list it.
      const options = { headers: { host }, servername: host, ca: ca.certPem, ...(withCert ? { cert: client.certPem, key: client.keyPem } : {}) } as ClientOptions;
      const ws = new WebSocket(`wss://127.0.0.1:${port}/chat`, options);
      ws.once('open', () => ws.send('hi'));
      ws.once('message', (m) => {
        resolve(m.toString());
        ws.close();
      });
      ws.once('unexpected-response', (_req, res) => reject(new Error(`status ${res.statusCode}`)));
      ws.once('error', reject);
    });

  it('refuses an upgrade without a client certificate on an mTLS route (495), and the upstream sees nothing', async () => {
    const before = seen.length;
    const answer = await raw('mtls.example.com', `GET /chat HTTP/1.1\r\nHost: mtls.example.com\r\n${HANDSHAKE}\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 495 /);
    expect(seen.slice(before)).toEqual([]);
    expect(await echoOver('mtls.example.com', true)).toBe('plain:hi');
  });

  it('sends upgrades through the load balancer: never to an upstream its health check marked down', async () => {
    await expect.poll(async () => (await raw('lb.example.com', 'GET / HTTP/1.1\r\nHost: lb.example.com\r\nConnection: close\r\n\r\n')).endsWith('b'), { timeout: 5000 }).toBe(true);
    for (let i = 0; i < 8; i++) expect(await echoOver('lb.example.com')).toBe('b:hi');
  });

  it("opens upgrades with the route's upstream TLS settings (custom CA, server name, client certificate)", async () => {
    expect(await echoOver('tlsup.example.com')).toBe('secure:hi');
  });

  it('relays nothing behind an upgrade request when the upstream does not switch (upgrade smuggling)', async () => {
    smuggleLines.length = 0;
    const attack = `GET /chat HTTP/1.1\r\nHost: smuggle.example.com\r\n${HANDSHAKE}\r\nGET /admin HTTP/1.1\r\nHost: smuggle.example.com\r\nx-svc-jwt-assertion: forged\r\n\r\n`;
    const answer = await raw('smuggle.example.com', attack);
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('not a websocket');
    expect(answer.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    // Give a relayed second request time to arrive before asserting it did not.
    await new Promise((r) => setTimeout(r, 200));
    expect(smuggleLines).toEqual(['GET /chat assertion=-']);
  });

  it('refuses an anonymous CONNECT to a tcp route with a policy (401) and opens no upstream connection', async () => {
    const answer = await raw('private.example.com', 'CONNECT private.example.com:7000 HTTP/1.1\r\nHost: private.example.com:7000\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(tcpConnections).toEqual([]);
  });

  it('tunnels an HTTP/2 CONNECT through the same gate', async () => {
    const session = http2Connect(`https://127.0.0.1:${port}`, { ca: ca.certPem, servername: 'public.example.com' });
    try {
      const tunnel = (authority: string) =>
        new Promise<{ status: number; echo: string }>((resolve, reject) => {
          const stream = session.request({ ':method': 'CONNECT', ':authority': authority });
          let status = 0;
          let echo = '';
          stream.on('response', (h) => {
            status = Number(h[':status']);
            if (status === 200) stream.write('ping');
          });
          stream.on('data', (c: Buffer) => {
            echo += c.toString();
            if (status === 200 && echo === 'ping') stream.close();
          });
          stream.on('close', () => resolve({ status, echo }));
          stream.on('error', reject);
        });
      expect(await tunnel('public.example.com:7001')).toEqual({ status: 200, echo: 'ping' });
      const refused = await tunnel('private.example.com:7000');
      expect(refused.status).toBe(401);
      expect(tcpConnections).toEqual([]);
    } finally {
      session.close();
    }
  });
});
