/**
 * Serverless upstream identity end to end (docs/authentication.md "Serverless upstreams"): a route
 * with `enable_hostedcloud_serverless_authentication` sends its upstream `Authorization: Bearer
 * <ID token>` for the audience `https://<to host>`, from the service-account key file of
 * `hostedcloud_serverless_authentication_service_account`, exchanged at the key file's own
 * `token_uri` (here a token endpoint on loopback). Over every way in that forwards (HTTP/1.1,
 * HTTP/2, a websocket upgrade): the upstream gets the cloud's token, never the client's own
 * `Authorization`; tokens are reused (one call to the endpoint); a token endpoint that fails gives
 * 502 `serverless-token-unavailable` and nothing reaches the upstream. Keys are TEST ONLY.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { connect as h2connect } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { jwtVerify, SignJWT } from 'jose';
import { WebSocket, WebSocketServer } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { issue, makeCa, type Issued } from '../runtime/tls/pki.ts';
import { configDir, startUpstream, type Upstream } from './support.ts';

const account = generateKeyPairSync('rsa', { modulusLength: 2048 });
const cloud = generateKeyPairSync('rsa', { modulusLength: 2048 });
const EMAIL = 'svc-e2e@test-project.iam.example';

describe('serverless upstream identity', () => {
  let ca: Issued;
  let up: Upstream;
  let wss: WebSocketServer;
  let tokens: Server;
  let svc: Running;
  let port: number;
  const grants: string[] = [];
  const failing = { on: false };
  const seen: (string | undefined)[] = [];
  const cfg = configDir();

  beforeAll(async () => {
    ca = await makeCa('svc serverless test CA (TEST ONLY)');
    const server = await issue(ca, { cn: 'run.example.com', dns: ['run.example.com', 'down.example.com'], usage: 'server' });
    up = await startUpstream((req, res) => {
      seen.push(req.headers['authorization']);
      res.end('ok');
    });
    wss = new WebSocketServer({ server: up.server });
    wss.on('connection', (ws, req) => ws.send(String(req.headers['authorization'])));
    // The token endpoint: checks the JWT bearer grant, answers an ID token for `target_audience`.
    tokens = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        void (async () => {
          if (failing.on) return void res.writeHead(503).end('{"error":"backendError"}');
          const url = `http://127.0.0.1:${(tokens.address() as AddressInfo).port}/token`;
          const { payload } = await jwtVerify(new URLSearchParams(body).get('assertion') ?? '', account.publicKey, { issuer: EMAIL, audience: url });
          grants.push(String(payload['target_audience']));
          const now = Math.floor(Date.now() / 1000);
          const idToken = await new SignJWT({ email: EMAIL }).setProtectedHeader({ alg: 'RS256' }).setIssuer('https://cloud.test').setAudience(String(payload['target_audience'])).setExpirationTime(now + 3600).sign(cloud.privateKey);
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id_token: idToken }));
        })().catch(() => res.writeHead(400).end('{"error":"invalid_grant"}'));
      });
    });
    await new Promise<void>((r) => tokens.listen(0, '127.0.0.1', r));
    const tokenUri = `http://127.0.0.1:${(tokens.address() as AddressInfo).port}/token`;
    const key = JSON.stringify({ type: 'service_account', client_email: EMAIL, private_key: account.privateKey.export({ type: 'pkcs8', format: 'pem' }), private_key_id: 'k1', token_uri: tokenUri });
    // From the environment, as an operator keeps a secret out of the config (the plan holds a
    // reference; svc run reads it from its own environment).
    process.env['HOSTEDCLOUD_SERVERLESS_AUTHENTICATION_SERVICE_ACCOUNT'] = Buffer.from(key).toString('base64');
    cfg.writeTls(server, { codec_type: 'auto' }, [
      { name: 'run', from: 'https://run.example.com', to: up.url, allow_public_unauthenticated_access: true, allow_websockets: true, enable_hostedcloud_serverless_authentication: true },
      // Same upstream, another route: the token endpoint fails for it (below).
      { name: 'down', from: 'https://down.example.com', to: up.url.replace('127.0.0.1', 'localhost'), allow_public_unauthenticated_access: true, enable_hostedcloud_serverless_authentication: true },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
    port = svc.listening.address.port;
  });
  afterAll(async () => {
    await svc?.close();
    wss?.close();
    await up?.close();
    await new Promise<void>((r) => tokens?.close(() => r()));
    delete process.env['HOSTEDCLOUD_SERVERLESS_AUTHENTICATION_SERVICE_ACCOUNT'];
    cfg.remove();
  });

  const get = (host: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest({ host: '127.0.0.1', port, path: '/', servername: host, ca: ca.certPem, agent: false, headers: { host, accept: 'application/json', ...headers } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });

  const verified = async (authorization: string | undefined) => {
    expect(authorization).toMatch(/^Bearer /);
    const { payload } = await jwtVerify(authorization!.slice('Bearer '.length), cloud.publicKey, { audience: 'https://127.0.0.1', issuer: 'https://cloud.test' });
    return payload;
  };

  it("HTTP/1.1: the upstream gets the cloud's ID token for https://<to host>, never the client's Authorization", async () => {
    seen.length = 0;
    const r = await get('run.example.com', { authorization: 'Bearer client-token' });
    expect(r.status).toBe(200);
    expect(seen).toHaveLength(1);
    expect((await verified(seen[0]))['email']).toBe(EMAIL);
    expect(seen[0]).not.toContain('client-token');
  });

  it('HTTP/2: the same token, reused (one grant for the audience)', async () => {
    seen.length = 0;
    const session = h2connect(`https://127.0.0.1:${port}`, { ca: ca.certPem, servername: 'run.example.com' });
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const s = session.request({ ':path': '/', ':authority': 'run.example.com', authorization: 'Bearer client-token' });
        let code = 0;
        s.on('response', (h) => (code = Number(h[':status'])));
        s.on('data', () => undefined);
        s.on('end', () => resolve(code));
        s.on('error', reject);
        s.end();
      });
      expect(status).toBe(200);
    } finally {
      session.close();
    }
    await verified(seen[0]);
    expect(grants).toEqual(['https://127.0.0.1']);
  });

  it('a websocket upgrade carries the token too', async () => {
    // `servername` reaches the TLS connection (ws passes its options to https.request), though ws's types omit it.
    const sni: object = { servername: 'run.example.com' };
    const ws = new WebSocket(`wss://127.0.0.1:${port}/`, { headers: { host: 'run.example.com', authorization: 'Bearer client-token' }, ca: ca.certPem, ...sni });
    const first = await new Promise<string>((resolve, reject) => {
      ws.once('message', (m) => resolve(String(m)));
      ws.once('error', reject);
    });
    ws.close();
    await verified(first);
    expect(grants).toEqual(['https://127.0.0.1']);
  });

  it('a token endpoint that fails gives 502 serverless-token-unavailable, and nothing reaches the upstream', async () => {
    failing.on = true;
    seen.length = 0;
    try {
      const r = await get('down.example.com', { authorization: 'Bearer client-token' });
      expect(r.status).toBe(502);
      expect(r.body).toContain('serverless-token-unavailable');
      expect(seen).toEqual([]);
    } finally {
      failing.on = false;
    }
  });
});
