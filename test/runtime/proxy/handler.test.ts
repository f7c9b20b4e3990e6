/**
 * The request handler (runtime/proxy/handler.ts) over the gate's identity step, over HTTP/1.1 and
 * HTTP/2: an assertion that cannot be signed answers 500 `identity-assertion-failed` (logged with
 * the request id) and moves no balancer counter, since the gate picks only after the identity step;
 * a client gone while its assertion was signed is picked nothing. Real servers on loopback; the
 * generation is test/runtime/proxy/gate-support.ts.
 */
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect as http2Connect, constants, createServer as createHttp2Server, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHandler } from '../../../runtime/proxy/handler.ts';
import { gateSupport, type GateSupport, type Signing } from './gate-support.ts';

interface Answer {
  readonly status: number;
  readonly headers: Record<string, unknown>;
  readonly body: string;
}

let upstream: Server;
let upstreamUrl = '';
const seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    seen.push(req.headers);
    res.end('from upstream');
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});
afterAll(async () => {
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

/** svc's handler over `protocol`, on a generation whose signer answers as `signing` says. */
async function serve(protocol: 'http/1.1' | 'h2', signing: Signing): Promise<{ s: GateSupport; port: number; logs: Record<string, unknown>[]; close: () => Promise<void> }> {
  const s = gateSupport(signing, upstreamUrl);
  const logs: Record<string, unknown>[] = [];
  const handler = createHandler(s.store, { ...s.options, log: (e) => void logs.push(e) });
  const server: Server | Http2Server = protocol === 'h2' ? createHttp2Server(handler) : createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    s,
    port,
    logs,
    close: async () => {
      if ('closeAllConnections' in server) server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await s.close();
    },
  };
}

/** GET http://app.example.com/x through svc on `port`; `abort` cuts the request once svc asked for a signature. */
function get(protocol: 'http/1.1' | 'h2', port: number, abortWhen?: () => boolean): Promise<Answer | 'cut'> {
  if (protocol === 'h2') {
    return new Promise((resolve, reject) => {
      const session = http2Connect(`http://127.0.0.1:${port}`);
      session.on('error', reject);
      const stream = session.request({ ':method': 'GET', ':path': '/x', ':authority': 'app.example.com' });
      let body = '';
      let head: Record<string, unknown> = {};
      let aborted = false;
      stream.on('response', (h) => (head = h));
      stream.setEncoding('utf8');
      stream.on('data', (c: string) => (body += c));
      stream.on('close', () => {
        session.close();
        resolve(aborted ? 'cut' : { status: Number(head[':status']), headers: head, body });
      });
      stream.on('error', reject);
      if (abortWhen) {
        const poll = setInterval(() => {
          if (!abortWhen()) return;
          clearInterval(poll);
          aborted = true;
          stream.close(constants.NGHTTP2_CANCEL);
        }, 5);
      }
    });
  }
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/x', headers: { host: 'app.example.com' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', (e) => (abortWhen ? setTimeout(() => resolve('cut'), 50) : reject(e)));
    req.end();
    if (abortWhen) {
      const poll = setInterval(() => {
        if (!abortWhen()) return;
        clearInterval(poll);
        req.destroy();
      }, 5);
    }
  });
}

describe.each(['http/1.1', 'h2'] as const)('the handler over %s, the identity step before the pick', (protocol) => {
  it('a signed assertion reaches the upstream, through the one upstream picked', async () => {
    const svc = await serve(protocol, 'signed');
    try {
      const before = seen.length;
      const a = await get(protocol, svc.port);
      expect(a).toMatchObject({ status: 200, body: 'from upstream' });
      expect(svc.s.picks).toEqual([0]);
      expect(seen.slice(before).map((h) => h['x-svc-jwt-assertion'])).toEqual(['assertion-for-app.example.com']);
      await new Promise((r) => setTimeout(r, 20));
      expect(svc.s.outcomes).toHaveLength(1);
    } finally {
      await svc.close();
    }
  });

  it('a failing signer: 500 identity-assertion-failed, logged with the request id, no pick and no done', async () => {
    const svc = await serve(protocol, 'failed');
    try {
      const before = seen.length;
      const a = await get(protocol, svc.port);
      if (a === 'cut') throw new Error('cut');
      expect(a.status).toBe(500);
      expect(a.body).toContain('identity-assertion-failed');
      const requestId = a.headers['x-request-id'];
      expect(typeof requestId).toBe('string');
      expect(svc.logs).toContainEqual({ msg: 'identity assertion failed', requestId, error: 'signing key unavailable' });
      expect(svc.s.signed).toHaveLength(1);
      expect(svc.s.picks).toEqual([]);
      expect(svc.s.outcomes).toEqual([]);
      expect(seen.length).toBe(before);
    } finally {
      await svc.close();
    }
  });

  it('a client gone while its assertion is signed: nothing picked, nothing sent', async () => {
    const svc = await serve(protocol, 'held');
    try {
      const before = seen.length;
      expect(await get(protocol, svc.port, () => svc.s.signed.length > 0)).toBe('cut');
      await new Promise((r) => setTimeout(r, 50));
      svc.s.release();
      await new Promise((r) => setTimeout(r, 50));
      expect(svc.s.picks).toEqual([]);
      expect(svc.s.outcomes).toEqual([]);
      expect(seen.length).toBe(before);
    } finally {
      await svc.close();
    }
  });
});
