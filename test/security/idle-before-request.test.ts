/**
 * docs/security.md S37: a connection that never sends its first request is cut after `timeout_read`, on every
 * codec and in every phase before that request: the TLS handshake, HTTP/1.1 over TLS, HTTP/2 over
 * TLS before its preface and after it, plain HTTP/1.1 (an HTTP/2 prior-knowledge preface there is
 * refused: svc does not speak h2c), and the PROXY protocol header. Before the fix, a TLS connection
 * that negotiated `h2` and sent nothing stayed open until `timeout_idle` (5 minutes by default), and
 * the PROXY header had a fixed 5 s.
 * Short timeouts (`timeout_read: 500ms`, `timeout_idle: 10m` so that only the read timeout can
 * close); the assertions only say "closed within 3 s", never how fast.
 */
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { issue, makeCa, type Issued } from '../runtime/tls/pki.ts';
import { configDir, startUpstream, type Upstream } from '../e2e/support.ts';
import { frame, FRAME } from './h2-frames.ts';

const BOUND_MS = 3_000;
const TIMEOUTS = { timeout_read: '500ms', timeout_idle: '10m' };
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

let ca: Issued;
let server: Issued;
let up: Upstream;

beforeAll(async () => {
  ca = await makeCa('svc idle test CA (TEST ONLY)');
  server = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com'], usage: 'server' });
  up = await startUpstream((_req, res) => res.end('ok'));
});
afterAll(async () => {
  await up?.close();
});

/** Resolves true when `s` closes within the bound, false when it is still open then (and closes it). */
function closesWithinBound(s: Socket): Promise<boolean> {
  return new Promise((resolve) => {
    if (s.destroyed) return resolve(true);
    const timer = setTimeout(() => {
      s.destroy();
      resolve(false);
    }, BOUND_MS);
    s.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** A TLS connection for app.example.com with these ALPN protocols, over `socket` when given (after a PROXY header). */
function tls(port: number, alpn: string[], socket?: Socket): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const s: TLSSocket = tlsConnect({ host: '127.0.0.1', port, servername: 'app.example.com', ca: ca.certPem, ALPNProtocols: alpn, ...(socket ? { socket } : {}) }, () => resolve(s));
    s.on('error', reject);
    s.on('data', () => undefined);
  });
}

function tcp(port: number): Promise<Socket> {
  return new Promise((resolve) => {
    const s = netConnect(port, '127.0.0.1', () => resolve(s));
    s.on('error', () => undefined);
    s.on('data', () => undefined);
  });
}

/** Starts svc with these settings; returns its port and a stop function. */
async function start(write: (cfg: ReturnType<typeof configDir>) => void): Promise<{ port: number; stop: () => Promise<void> }> {
  const cfg = configDir();
  write(cfg);
  const svc: Running = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  return {
    port: svc.listening.address.port,
    stop: async () => {
      await svc.close();
      cfg.remove();
    },
  };
}

const route = () => [{ from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true }];

describe.each(['auto', 'http2', 'http1'] as const)('codec_type %s over TLS: timeout_read before the first request', (codec) => {
  let svc: Awaited<ReturnType<typeof start>>;
  beforeAll(async () => {
    svc = await start((cfg) => cfg.writeTls(server, { codec_type: codec, ...TIMEOUTS }, route()));
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('closes a connection that never sends a TLS ClientHello', async () => {
    expect(await closesWithinBound(await tcp(svc.port))).toBe(true);
  });

  // Each codec's own protocol (not skips: the other shape does not exist on that codec).
  if (codec !== 'http2')
    it('closes an HTTP/1.1 connection that sends nothing after the handshake', async () => {
      const s = await tls(svc.port, ['http/1.1']);
      expect(await closesWithinBound(s)).toBe(true);
    });

  if (codec !== 'http1') {
    it('closes an h2 connection that never sends the preface', async () => {
      const s = await tls(svc.port, ['h2']);
      expect(s.alpnProtocol).toBe('h2');
      expect(await closesWithinBound(s)).toBe(true);
    });

    it('closes an h2 connection that sends its preface and SETTINGS but no request', async () => {
      const s = await tls(svc.port, ['h2']);
      s.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0)]));
      expect(await closesWithinBound(s)).toBe(true);
    });
  }
});

describe('plain HTTP (insecure_server): timeout_read before the first request', () => {
  let svc: Awaited<ReturnType<typeof start>>;
  beforeAll(async () => {
    svc = await start((cfg) => cfg.write(TIMEOUTS, route()));
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('closes a connection that sends nothing', async () => {
    expect(await closesWithinBound(await tcp(svc.port))).toBe(true);
  });

  it('refuses an HTTP/2 prior-knowledge preface (no h2c) and closes the connection', async () => {
    const s = await tcp(svc.port);
    s.write(PREFACE);
    expect(await closesWithinBound(s)).toBe(true);
  });
});

describe('use_proxy_protocol: timeout_read bounds the PROXY header too', () => {
  let svc: Awaited<ReturnType<typeof start>>;
  beforeAll(async () => {
    svc = await start((cfg) => cfg.writeTls(server, { codec_type: 'auto', use_proxy_protocol: true, ...TIMEOUTS }, route()));
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('closes a connection that never sends its PROXY header', async () => {
    expect(await closesWithinBound(await tcp(svc.port))).toBe(true);
  });

  it('closes an h2 connection that sends its PROXY header, then no preface', async () => {
    const raw = await tcp(svc.port);
    raw.write('PROXY TCP4 203.0.113.7 127.0.0.1 51000 443\r\n');
    const s = await tls(svc.port, ['h2'], raw);
    expect(await closesWithinBound(s)).toBe(true);
  });
});
