/**
 * `/.svc/ping` and `/.svc/ready` on the main listener (docs/observability.md; docs/observability.md "Health
 * endpoints"), without `metrics_address`: answered by svc on every host it serves (a route's or
 * not), over HTTP/1.1 and HTTP/2, after the same canonical-request checks as every request, never
 * sent upstream; `/.svc/ready` turns 503 `draining` once the graceful stop starts while `/.svc/ping`
 * stays 200.
 */
import { connect as http2Connect, type ClientHttp2Session } from 'node:http2';
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { issue, makeCa, type Issued } from '../runtime/tls/pki.ts';
import { configDir, startUpstream, type Upstream } from './support.ts';

interface Answer {
  readonly status: number;
  readonly body: string;
}

describe('/.svc/ping and /.svc/ready on the main listener', () => {
  let ca: Issued;
  let up: Upstream;
  let upstreamRequests = 0;
  let svc: Running;
  const cfg = configDir();
  const sessions: ClientHttp2Session[] = [];

  beforeAll(async () => {
    ca = await makeCa('svc probes test CA (TEST ONLY)');
    const server = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com', 'unrouted.example.com'], usage: 'server' });
    up = await startUpstream((_req, res) => {
      upstreamRequests++;
      res.end('from the upstream');
    });
    // A route taking every path of its host: the probes are never its.
    cfg.writeTls(server, { codec_type: 'auto' }, [{ name: 'app', from: 'https://app.example.com', prefix: '/', to: up.url, allow_public_unauthenticated_access: true }]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, watch: false, grpcListen: { host: '127.0.0.1', port: 0 } });
  }, 60_000);

  afterAll(async () => {
    for (const s of sessions) s.destroy();
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  /** One HTTP/1.1 request (no ALPN: the HTTP/1.1 fallback) on a new connection. */
  function h1(path: string, host = 'app.example.com', method = 'GET'): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: svc.listening.address.port, path, method, servername: host, ca: ca.certPem, agent: false, headers: { host } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
      req.on('error', reject);
      req.end();
    });
  }

  /** One HTTP/2 stream on a new session. */
  function h2(path: string, host = 'app.example.com'): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const session = http2Connect(`https://127.0.0.1:${svc.listening.address.port}`, { ca: ca.certPem, servername: host });
      sessions.push(session);
      session.on('error', reject);
      const stream = session.request({ ':path': path, ':authority': host });
      let status = 0;
      let body = '';
      stream.setEncoding('utf8');
      stream.on('response', (h) => (status = Number(h[':status'])));
      stream.on('data', (c: string) => (body += c));
      stream.on('end', () => {
        session.close();
        resolve({ status, body });
      });
      stream.on('error', reject);
    });
  }

  it('answer 200 OK on a route host and on a host no route serves, over HTTP/1.1 and HTTP/2, never from the upstream', async () => {
    for (const host of ['app.example.com', 'unrouted.example.com']) {
      for (const path of ['/.svc/ping', '/.svc/ready']) {
        expect(await h1(path, host)).toEqual({ status: 200, body: 'OK' });
        expect(await h2(path, host)).toEqual({ status: 200, body: 'OK' });
      }
    }
    expect(upstreamRequests).toBe(0);
    // The route still serves everything else.
    expect(await h1('/anything')).toEqual({ status: 200, body: 'from the upstream' });
  });

  it('pass the canonical-request checks: a path that canonicalizes to a probe is one, an encoded slash is refused', async () => {
    upstreamRequests = 0;
    expect(await h1('/.svc/./ping')).toEqual({ status: 200, body: 'OK' });
    expect(await h1('/.svc//ready')).toEqual({ status: 200, body: 'OK' });
    expect(await h1('/.svc/%70ing')).toEqual({ status: 200, body: 'OK' });
    expect((await h1('/.svc%2fping')).status).toBe(400);
    expect((await h2('/.svc%2fping')).status).toBe(400);
    expect(upstreamRequests).toBe(0);
  });

  it('answer GET and HEAD only', async () => {
    expect(await h1('/.svc/ping', 'app.example.com', 'HEAD')).toEqual({ status: 200, body: '' });
    expect((await h1('/.svc/ping', 'app.example.com', 'POST')).status).toBe(405);
  });

  it('once svc drains, /.svc/ready answers 503 draining and /.svc/ping still 200 (during the shutdown delay)', async () => {
    // A long shutdown delay: the listener still accepts while readiness fails. Closed by afterAll.
    void svc.drain(60_000, 600_000);
    expect(await h1('/.svc/ready')).toEqual({ status: 503, body: 'draining' });
    expect(await h2('/.svc/ready')).toEqual({ status: 503, body: 'draining' });
    expect(await h1('/.svc/ping')).toEqual({ status: 200, body: 'OK' });
    expect(await h2('/.svc/ping')).toEqual({ status: 200, body: 'OK' });
  });
});
