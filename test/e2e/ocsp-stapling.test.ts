/**
 * OCSP stapling end to end (autocert on, configured certificates from a TEST-ONLY CA made here by
 * openssl, whose `openssl ocsp` responder is the real responder): a client asking for the status
 * gets a staple that openssl verifies as `good`, the staple is refreshed, and a must-staple
 * certificate is refused once its last staple expired and the responder is gone, while the plain
 * certificate keeps being served without a staple.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { freePort } from '../support/pebble.ts';
import { describeWithCommands } from '../support/system.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

/** Connects with a status request; resolves with the stapled response (undefined: none), rejects when the handshake fails. */
function handshake(port: number, servername: string, ca: string): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    let staple: Buffer | undefined;
    // `requestOCSP` (a TLSSocket option tls.connect passes on) is missing from @types/node's ConnectionOptions.
    const options: ConnectionOptions & { requestOCSP: boolean } = { host: '127.0.0.1', port, servername, ca, requestOCSP: true, ALPNProtocols: ['http/1.1'] };
    const s = tlsConnect(options, () => {
      s.end();
      resolve(staple);
    });
    s.on('OCSPResponse', (r: Buffer | null) => (staple = r ?? undefined));
    s.on('error', reject);
    s.on('close', () => reject(new Error('closed before the handshake finished')));
  });
}

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describeWithCommands(['openssl'], 'OCSP stapling', () => {
  let dir: string;
  let responder: ChildProcess | undefined;
  let ocspPort: number;
  let up: Upstream;
  let svc: Running;
  let port: number;
  let caPem: string;
  const cfg = configDir();
  const logs: Record<string, unknown>[] = [];
  let skewMs = 0;

  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }).toString();

  /** A TEST-ONLY leaf for `name` signed by the test CA, naming the responder; must-staple when asked. */
  const leaf = (name: string, mustStaple: boolean): { name: string; cert: string; key: string; serial: string } => {
    openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    writeFileSync(
      join(dir, `${name}.ext`),
      [`subjectAltName=DNS:${name}`, `authorityInfoAccess=OCSP;URI:http://127.0.0.1:${ocspPort}`, 'extendedKeyUsage=serverAuth', ...(mustStaple ? ['tlsfeature=status_request'] : [])].join('\n'),
    );
    openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.pem`);
    const serial = openssl('x509', '-in', `${name}.pem`, '-noout', '-serial').trim().replace(/^serial=/, '');
    // The chain svc serves: leaf, then the issuer (where Node finds the issuer for the status request).
    writeFileSync(join(dir, `${name}.chain.pem`), readFileSync(join(dir, `${name}.pem`), 'utf8') + caPem);
    return { name, cert: join(dir, `${name}.chain.pem`), key: join(dir, `${name}.key`), serial };
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-ocsp-'));
    ocspPort = await freePort();
    port = await freePort();
    openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=TEST ONLY OCSP CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
    caPem = readFileSync(join(dir, 'ca.pem'), 'utf8');
    const plain = leaf('app.test', false);
    const staple = leaf('staple.test', true);
    writeFileSync(join(dir, 'index.txt'), [plain, staple].map((c) => `V\t301231000000Z\t\t${c.serial}\tunknown\t/CN=${c.name}\n`).join(''));
    // The real responder, signing with the CA key; responses valid five minutes.
    responder = spawn('openssl', ['ocsp', '-index', 'index.txt', '-port', String(ocspPort), '-rsigner', 'ca.pem', '-rkey', 'ca.key', '-CA', 'ca.pem', '-nmin', '5', '-ignore_err'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    // Ready once it says so (a probe connection would hold up its one-at-a-time loop).
    let said = '';
    responder.stderr!.on('data', (c: Buffer) => (said += c.toString()));
    await until('the OCSP responder', async () => (said.includes('waiting for OCSP client connections') ? true : undefined));
    up = await startUpstream(echo);
    const { insecure_server: _i, ...base } = BASE_SETTINGS;
    cfg.writeRaw(
      stringify({
        ...base,
        address: `127.0.0.1:${port}`,
        authenticate_service_url: 'https://app.test',
        autocert: true,
        autocert_dir: join(dir, 'autocert'),
        certificates: [plain, staple].map((c) => ({ cert: c.cert, key: c.key })),
        routes: [
          { from: 'https://app.test', to: up.url, allow_public_unauthenticated_access: true },
          { from: 'https://staple.test', to: up.url, allow_public_unauthenticated_access: true },
        ],
      }),
    );
    svc = await run({
      configPath: cfg.path,
      watch: false,
      grpcListen: { host: '127.0.0.1', port: 0 },
      log: (e) => logs.push(e),
      // A fresh response every few hundred ms (the responder's are valid five minutes); the clock
      // the stapler judges expiry by is moved forward by skewMs.
      autocertTiming: { ocsp: { now: () => Date.now() + skewMs, refreshTime: () => Date.now() + skewMs + 300, minRefreshMs: 300, retryMs: 200 } },
    });
  }, 30_000);

  afterAll(async () => {
    await svc?.close();
    responder?.kill();
    await up?.close();
    cfg.remove();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('staples a response openssl verifies as good, and refreshes it', async () => {
    // Configured certificates covering every name: autocert orders nothing, it only staples.
    expect(svc.autocert?.names).toEqual([]);
    const first = await until('a staple for app.test', () => handshake(port, 'app.test', caPem));
    writeFileSync(join(dir, 'staple.der'), first);
    const out = execFileSync('openssl', ['ocsp', '-respin', 'staple.der', '-issuer', 'ca.pem', '-cert', 'app.test.pem', '-CAfile', 'ca.pem', '-no_nonce'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
    expect(out).toMatch(/app\.test\.pem: good/);
    // A later handshake gets a newer response (producedAt moves on, so the bytes differ).
    const later = await until('a refreshed staple', async () => {
      const s = await handshake(port, 'app.test', caPem);
      return s && !s.equals(first) ? s : undefined;
    });
    expect(later.length).toBeGreaterThan(0);
  }, 30_000);

  it('refuses a must-staple certificate once its staple expired, and serves the plain one without', async () => {
    expect(await until('a staple for staple.test', () => handshake(port, 'staple.test', caPem))).toBeInstanceOf(Buffer);
    responder!.kill();
    await new Promise((r) => responder!.once('exit', r));
    // Past the last response's nextUpdate (five minutes), with the responder gone.
    skewMs = 10 * 60_000;
    await expect(handshake(port, 'staple.test', caPem)).rejects.toThrow();
    expect(logs.some((l) => String(l['msg']).startsWith('ocsp: handshake refused: must-staple'))).toBe(true);
    expect(await handshake(port, 'app.test', caPem)).toBeUndefined();
    // The failed refreshes are logged (at warn the first time).
    expect(await until('the refresh failure logged', async () => logs.find((l) => l['msg'] === 'ocsp: cannot refresh the OCSP response' && l['level'] === 'warn'))).toMatchObject({ responder: `http://127.0.0.1:${ocspPort}` });
  }, 30_000);
});
