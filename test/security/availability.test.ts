/**
 * Issue 13 §7, availability: requests a client can shape so that svc fails them all, or holds them
 * open forever. Rules:
 * - `Expect: 100-continue` is answered by svc at the door, after the gate admitted the request (a
 *   refused request gets its final answer and no `100 Continue`), and the body is forwarded without
 *   the expectation (undici refuses the header): over HTTP/1.1 and HTTP/2.
 * Real svc over TLS (`codec_type: auto`) and a real upstream; raw TLS sockets and the node:http2
 * client, which send the shapes as written.
 */
import { writeFileSync } from 'node:fs';
import { connect as http2Connect } from 'node:http2';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/run/run.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { issue, makeCa, type Issued } from '../runtime/listen/pki.ts';
import { configDir, startUpstream, type Upstream } from '../e2e/support.ts';

interface Seen {
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

let ca: Issued;
let server: Issued;

/** A config for a TLS svc with this codec and these settings, a public and a private route to `up`. */
function writeConfig(cfg: ReturnType<typeof configDir>, up: Upstream, extra: Record<string, unknown>, routeExtra: Record<string, unknown> = {}): void {
  const file = (name: string, text: string) => {
    writeFileSync(join(cfg.dir, name), text);
    return join(cfg.dir, name);
  };
  const { insecure_server: _insecure, ...settings } = BASE_SETTINGS;
  cfg.writeRaw(
    stringify({
      ...settings,
      address: '127.0.0.1:8443',
      codec_type: 'auto',
      certificate_file: file('server.pem', server.certPem),
      certificate_key_file: file('server.key', server.keyPem),
      ...extra,
      routes: [
        { from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true, ...routeExtra },
        { from: 'https://private.example.com', to: up.url, policy: 'allow if groups has "admins"' },
      ],
    }),
  );
}

/** A TLS connection to svc for `app.example.com`, HTTP/1.1 by ALPN. */
function tls(port: number, host = 'app.example.com'): Promise<TLSSocket> {
  return new Promise((resolve) => {
    const s: TLSSocket = tlsConnect({ host: '127.0.0.1', port, servername: host, ca: ca.certPem, ALPNProtocols: ['http/1.1'] }, () => resolve(s));
    s.on('error', () => undefined);
  });
}

/** Resolves with everything read once `pattern` has been read (or, after 3 s, with what was read). */
function readUntil(s: TLSSocket, pattern: RegExp): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    const timer = setTimeout(() => done(`${out}<timeout>`), 3000);
    const done = (text: string) => {
      clearTimeout(timer);
      s.off('data', onData);
      s.off('close', onClose);
      resolve(text);
    };
    const onData = (c: Buffer) => {
      out += c.toString('latin1');
      if (pattern.test(out)) done(out);
    };
    const onClose = () => done(out);
    s.on('data', onData);
    s.on('close', onClose);
  });
}

beforeAll(async () => {
  ca = await makeCa('svc availability test CA (TEST ONLY)');
  server = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com', 'private.example.com'], usage: 'server' });
});

describe('issue 13 §7: Expect: 100-continue', () => {
  const cfg = configDir();
  const seen: Seen[] = [];
  let up: Upstream;
  let svc: Running;
  const port = () => svc.listening.address.port;

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ headers: req.headers, body });
        res.end('ok');
      });
    });
    writeConfig(cfg, up, {});
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  it('HTTP/1.1: svc answers 100 Continue after the gate, then forwards the body without the expectation', async () => {
    const s = await tls(port());
    try {
      s.write('POST /upload HTTP/1.1\r\nHost: app.example.com\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n');
      expect(await readUntil(s, /\r\n\r\n/)).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
      const n = seen.length;
      s.write('hello');
      expect(await readUntil(s, /\r\n\r\nok/)).toMatch(/^HTTP\/1\.1 200 /);
      expect(seen.length).toBe(n + 1);
      expect(seen[n]!.body).toBe('hello');
      expect(seen[n]!.headers['expect']).toBeUndefined();
    } finally {
      s.destroy();
    }
  });

  it('HTTP/1.1: a request the gate refuses gets its final answer, and no 100 Continue solicits its body', async () => {
    const s = await tls(port(), 'private.example.com');
    try {
      const n = seen.length;
      s.write('POST /upload HTTP/1.1\r\nHost: private.example.com\r\nExpect: 100-continue\r\nAccept: application/json\r\nContent-Length: 5\r\n\r\n');
      expect(await readUntil(s, /\r\n\r\n/)).toMatch(/^HTTP\/1\.1 401 /);
      expect(seen.length).toBe(n);
    } finally {
      s.destroy();
    }
  });

  it('HTTP/2: the stream gets 100 Continue, then the body is forwarded without the expectation', async () => {
    const session = http2Connect(`https://127.0.0.1:${port()}`, { ca: ca.certPem, servername: 'app.example.com' });
    try {
      const n = seen.length;
      const status = await new Promise<number>((resolve, reject) => {
        const stream = session.request({ ':method': 'POST', ':path': '/upload', ':authority': 'app.example.com', expect: '100-continue' });
        let answered = 0;
        stream.on('continue', () => stream.end('hello'));
        stream.on('response', (h) => (answered = Number(h[':status'])));
        stream.on('data', () => undefined);
        stream.on('close', () => resolve(answered));
        stream.on('error', reject);
      });
      expect(status).toBe(200);
      expect(seen.length).toBe(n + 1);
      expect(seen[n]!.body).toBe('hello');
      expect(seen[n]!.headers['expect']).toBeUndefined();
    } finally {
      session.close();
    }
  });
});
