/**
 * The PROXY protocol (v1 and v2) in front of real HTTP and TLS servers on loopback: the peer
 * address the server sees is the PROXY source; a missing, invalid, oversized or late header
 * closes the connection; a header split over several TCP packets is read whole.
 */
import http from 'node:http';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ProxyProtocolError } from '../../../runtime/tls/errors.ts';
import { createProxyProtocolServer, parseProxyHeader, proxyInfoOf } from '../../../runtime/proxy/proxy-protocol.ts';
import { issue, makeCa, type Issued } from '../tls/pki.ts';
import { closeServer, listen } from '../tls/tls-client.ts';

const SIG = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);

/** A v2 header: version 2, `cmd` (0 LOCAL, 1 PROXY), family/transport byte, then `body`. */
function v2(cmd: number, famProto: number, body: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head[0] = 0x20 | cmd;
  head[1] = famProto;
  head.writeUInt16BE(body.length, 2);
  return Buffer.concat([SIG, head, body]);
}

function v2Tcp4(src: string, dst: string, sp: number, dp: number): Buffer {
  const b = Buffer.alloc(12);
  src.split('.').forEach((o, i) => (b[i] = Number(o)));
  dst.split('.').forEach((o, i) => (b[4 + i] = Number(o)));
  b.writeUInt16BE(sp, 8);
  b.writeUInt16BE(dp, 10);
  return v2(1, 0x11, b);
}

function v2Tcp6(src: Buffer, dst: Buffer, sp: number, dp: number): Buffer {
  const ports = Buffer.alloc(4);
  ports.writeUInt16BE(sp, 0);
  ports.writeUInt16BE(dp, 2);
  return v2(1, 0x21, Buffer.concat([src, dst, ports]));
}

const REQUEST = 'GET /who HTTP/1.1\r\nHost: app.example.com\r\nConnection: close\r\n\r\n';

let servers: net.Server[] = [];
const errors: ProxyProtocolError[] = [];
afterEach(async () => {
  for (const s of servers) await closeServer(s);
  servers = [];
  errors.length = 0;
});

/** An HTTP server behind the PROXY wrapper that answers with the peer it sees. */
async function httpBehindProxy(timeoutMs = 2000): Promise<number> {
  const target = http.createServer((req, res) => {
    const info = proxyInfoOf(req.socket);
    res.end(`${req.socket.remoteAddress}|${req.socket.remotePort}|${info?.local === false ? `${info.destAddress}:${info.destPort}` : info ? 'local' : 'none'}`);
  });
  const front = createProxyProtocolServer(target, { timeoutMs, onError: (e) => errors.push(e) });
  servers.push(front, target);
  return listen(front);
}

/** Sends `parts` (with a pause between them) and resolves with everything received before close. */
function exchange(port: number, parts: (Buffer | string)[], pauseMs = 0): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.connect(port, '127.0.0.1');
    c.setNoDelay(true);
    let got = '';
    c.on('data', (d: Buffer) => (got += d.toString('latin1')));
    c.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? resolve(got) : reject(e)));
    c.on('close', () => resolve(got));
    c.on('connect', async () => {
      for (const p of parts) {
        if (c.destroyed) return;
        c.write(p);
        if (pauseMs > 0) await sleep(pauseMs);
      }
    });
  });
}

const bodyOf = (response: string): string => response.slice(response.indexOf('\r\n\r\n') + 4);

describe('PROXY protocol in front of an HTTP server', () => {
  it('v1 TCP4: the server sees the PROXY source address and port', async () => {
    const port = await httpBehindProxy();
    const res = await exchange(port, [`PROXY TCP4 203.0.113.7 192.0.2.1 51000 443\r\n${REQUEST}`]);
    expect(res).toMatch(/^HTTP\/1\.1 200/);
    expect(bodyOf(res)).toBe('203.0.113.7|51000|192.0.2.1:443');
  });

  it('v1 TCP6', async () => {
    const port = await httpBehindProxy();
    const res = await exchange(port, [`PROXY TCP6 2001:db8::7 2001:db8::1 51000 443\r\n${REQUEST}`]);
    expect(bodyOf(res)).toBe('2001:db8::7|51000|2001:db8::1:443');
  });

  it('v2 TCP4 and TCP6', async () => {
    const port = await httpBehindProxy();
    expect(bodyOf(await exchange(port, [Buffer.concat([v2Tcp4('198.51.100.9', '192.0.2.1', 4000, 8443), Buffer.from(REQUEST)])]))).toBe('198.51.100.9|4000|192.0.2.1:8443');
    const src = Buffer.from('20010db8000000000000000000000009', 'hex');
    const dst = Buffer.from('20010db8000000010000000000000001', 'hex');
    expect(bodyOf(await exchange(port, [Buffer.concat([v2Tcp6(src, dst, 5000, 443), Buffer.from(REQUEST)])]))).toBe('2001:db8::9|5000|2001:db8:0:1::1:443');
  });

  it('v2 LOCAL and v1 UNKNOWN keep the real peer', async () => {
    const port = await httpBehindProxy();
    const local = bodyOf(await exchange(port, [Buffer.concat([v2(0, 0x00, Buffer.alloc(0)), Buffer.from(REQUEST)])]));
    expect(local).toMatch(/^127\.0\.0\.1\|\d+\|local$/);
    const unknown = bodyOf(await exchange(port, [`PROXY UNKNOWN\r\n${REQUEST}`]));
    expect(unknown).toMatch(/^127\.0\.0\.1\|\d+\|local$/);
  });

  it('reads a header split over several TCP packets, and the request after it', async () => {
    const port = await httpBehindProxy();
    const v1 = `PROXY TCP4 203.0.113.7 192.0.2.1 51000 443\r\n${REQUEST}`;
    const pieces = [v1.slice(0, 3), v1.slice(3, 17), v1.slice(17, 45), v1.slice(45, 50), v1.slice(50)];
    expect(bodyOf(await exchange(port, pieces, 30))).toBe('203.0.113.7|51000|192.0.2.1:443');
    const h2 = Buffer.concat([v2Tcp4('198.51.100.9', '192.0.2.1', 4000, 8443), Buffer.from(REQUEST)]);
    const bytes = [h2.subarray(0, 5), h2.subarray(5, 14), h2.subarray(14, 20), h2.subarray(20)];
    expect(bodyOf(await exchange(port, bytes, 30))).toBe('198.51.100.9|4000|192.0.2.1:8443');
  });

  it('closes a connection that starts without a header, without answering', async () => {
    const port = await httpBehindProxy();
    expect(await exchange(port, [REQUEST])).toBe('');
    expect(errors.map((e) => [e.code, e.reason])).toEqual([['SVC_ERR_PROXY_PROTOCOL', 'invalid']]);
  });

  it('closes a connection with a malformed header', async () => {
    const port = await httpBehindProxy();
    expect(await exchange(port, [`PROXY TCP4 203.0.113.7 192.0.2.1 99999 443\r\n${REQUEST}`])).toBe('');
    expect(await exchange(port, [`PROXY TCP4 2001:db8::7 192.0.2.1 1 443\r\n${REQUEST}`])).toBe('');
    expect(await exchange(port, [Buffer.concat([SIG, Buffer.from([0x31, 0x11, 0, 12]), Buffer.alloc(12), Buffer.from(REQUEST)])])).toBe('');
    expect(errors.map((e) => e.reason)).toEqual(['invalid', 'invalid', 'invalid']);
  });

  it('closes a connection that sends no header before the deadline', async () => {
    const port = await httpBehindProxy(150);
    const started = Date.now();
    expect(await exchange(port, ['PROXY TCP4 '])).toBe('');
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(errors.map((e) => e.reason)).toEqual(['timeout']);
  });

  it('rejects an oversized header', async () => {
    const port = await httpBehindProxy();
    expect(await exchange(port, [v2(1, 0x11, Buffer.alloc(5000))])).toBe('');
    expect(await exchange(port, [`PROXY TCP4 ${'1'.repeat(120)}\r\n`])).toBe('');
    expect(errors.map((e) => e.reason)).toEqual(['too-large', 'invalid']);
  });
});

describe('PROXY protocol in front of a TLS server', () => {
  let cert: Issued;
  beforeAll(async () => {
    cert = await issue(await makeCa('CA'), { cn: 'app.example.com', dns: ['app.example.com'] });
  });

  it('hands the socket to TLS with the bytes after the header, and the TLS socket reports the PROXY source', async () => {
    const target = tls.createServer({ cert: cert.certPem, key: cert.keyPem }, (s) => {
      s.end(`${s.remoteAddress}|${s.remotePort}|${proxyInfoOf(s)?.local}\n`);
    });
    const front = createProxyProtocolServer(target, { timeoutMs: 2000 });
    servers.push(front, target);
    const port = await listen(front);
    const line = await new Promise<string>((resolve, reject) => {
      const raw = net.connect(port, '127.0.0.1', () => {
        // The header and the ClientHello leave together, as a load balancer sends them.
        raw.cork();
        raw.write('PROXY TCP4 203.0.113.7 192.0.2.1 51000 443\r\n');
        const s = tls.connect({ socket: raw, servername: 'app.example.com', rejectUnauthorized: false });
        process.nextTick(() => raw.uncork());
        let got = '';
        s.on('data', (d: Buffer) => (got += d.toString()));
        s.on('error', reject);
        s.on('close', () => resolve(got.trim()));
      });
    });
    expect(line).toBe('203.0.113.7|51000|false');
  });
});

describe('parseProxyHeader', () => {
  it('asks for more bytes only while the input can still become a header', () => {
    expect(parseProxyHeader(Buffer.from('PROX'))).toEqual({ status: 'incomplete' });
    expect(parseProxyHeader(SIG.subarray(0, 7))).toEqual({ status: 'incomplete' });
    expect(parseProxyHeader(Buffer.from('PROXY TCP4 1.2.3.4'))).toEqual({ status: 'incomplete' });
    expect(parseProxyHeader(Buffer.from('GET / HTTP/1.1'))).toMatchObject({ status: 'failed', reason: 'invalid' });
    expect(parseProxyHeader(Buffer.from('\r\n\r\nX'))).toMatchObject({ status: 'failed', reason: 'invalid' });
  });

  it('is strict about v1 fields', () => {
    const bad = ['PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n', 'PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n', 'PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n', 'PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n', 'PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n', 'PROXY TCP6 fe80::1%eth0 2001:db8::1 1 2\r\n', 'PROXY TCP6 2001:db8::7 fe80::1%1 1 2\r\n'];
    for (const b of bad) expect([b, parseProxyHeader(Buffer.from(b)).status]).toEqual([b, 'failed']);
    expect(parseProxyHeader(Buffer.from('PROXY TCP4 1.2.3.4 5.6.7.8 0 65535\r\nrest'))).toEqual({
      status: 'done',
      length: 36,
      info: { local: false, family: 'IPv4', sourceAddress: '1.2.3.4', destAddress: '5.6.7.8', sourcePort: 0, destPort: 65535 },
    });
  });

  it('reads v2 TLVs as part of the header and formats IPv4-mapped addresses', () => {
    const mapped = Buffer.from('00000000000000000000ffffc0000207', 'hex');
    const h = v2Tcp6(mapped, mapped, 1, 2);
    const withTlv = Buffer.concat([h.subarray(0, 14), Buffer.from([0, h.readUInt16BE(14) + 5]), h.subarray(16), Buffer.from([0x04, 0, 2, 0xaa, 0xbb])]);
    expect(parseProxyHeader(withTlv)).toMatchObject({ status: 'done', length: 16 + 36 + 5, info: { sourceAddress: '::ffff:192.0.2.7' } });
    expect(parseProxyHeader(v2(1, 0x12, Buffer.alloc(12)))).toMatchObject({ status: 'failed', reason: 'invalid' });
    expect(parseProxyHeader(v2(1, 0x11, Buffer.alloc(8)))).toMatchObject({ status: 'failed', reason: 'invalid' });
    expect(parseProxyHeader(v2(1, 0x11, Buffer.alloc(300)), 200)).toMatchObject({ status: 'failed', reason: 'too-large' });
  });
});
