/**
 * Autocert end to end against a real ACME CA (pebble): svc obtains certificates through
 * TLS-ALPN-01 on its own HTTPS port for a route host and the authenticate host and serves them
 * (a client trusting pebble's root verifies the chain), reuses the stored certificate after a
 * restart without a new order, puts must-staple into the certificate when asked, swaps a renewed
 * certificate in while requests keep flowing, shares one directory between two instances (one
 * order per name), and registers with EAB (a wrong MAC key is a clear log line, not a crash).
 */
import { request } from 'node:https';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { hasMustStaple } from '../../runtime/tls/acme/csr.ts';
import { AutocertStorage } from '../../runtime/tls/acme/storage.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { autocertConfig, freePort, startPebble, type Pebble } from '../support/pebble.ts';
import { describeWithCommands } from '../support/system.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly serial: string;
  readonly pem: string;
}

function get(port: number, servername: string, ca: string, agent: import('node:https').Agent | false = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', servername, headers: { host: servername }, ca, agent }, (res) => {
      let body = '';
      const cert = (res.socket as TLSSocket).getPeerCertificate();
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, serial: cert.serialNumber, pem: `-----BEGIN CERTIFICATE-----\n${cert.raw.toString('base64')}\n-----END CERTIFICATE-----\n` }));
    });
    req.on('error', reject);
    req.end();
  });
}

function alpn(port: number, servername: string, protocols: string[], ca: string): Promise<string | false> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port, servername, ALPNProtocols: protocols, ca }, () => {
      resolve(s.alpnProtocol ?? false);
      s.end();
    });
    s.on('error', reject);
  });
}

describeWithCommands(['pebble', 'pebble-challtestsrv'], 'autocert with pebble', () => {
  let pebble: Pebble;
  let port: number;
  let up: Upstream;
  let root: string;
  const cfg = configDir();
  const dirs: string[] = [];
  const logs: Record<string, unknown>[] = [];

  const newDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'svc-autocert-'));
    dirs.push(d);
    return join(d, 'autocert');
  };
  // Each instance gets its own config file: two may be starting at once (run() reads its file later
  // than its first await).
  let configs = 0;
  const start = (dir: string, extra: Record<string, unknown> = {}, timing: Parameters<typeof run>[0]['autocertTiming'] = {}): Promise<Running> => {
    const configPath = cfg.file(`config-${++configs}.yaml`, stringify(autocertConfig(pebble, port, dir, up.url, extra)));
    return run({ configPath, watch: false, grpcListen: { host: '127.0.0.1', port: 0 }, log: (e) => logs.push(e), autocertTiming: { pollMs: 200, ...timing } });
  };

  beforeAll(async () => {
    port = await freePort();
    pebble = await startPebble({ tlsPort: port });
    root = await pebble.root();
    up = await startUpstream(echo);
  }, 30_000);
  afterAll(async () => {
    await up?.close();
    await pebble?.close();
    cfg.remove();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('obtains certificates for the route host and the authenticate host, then reuses them after a restart', async () => {
    const dir = newDir();
    let svc = await start(dir, { codec_type: 'auto' });
    try {
      expect(svc.autocert?.names).toEqual(['app.test', 'auth.test']);
      await Promise.all([svc.autocert!.whenIssued('app.test'), svc.autocert!.whenIssued('auth.test')]);
      const app = await get(port, 'app.test', root);
      expect(app.status).toBe(200);
      expect(JSON.parse(app.body).url).toBe('/');
      // The authenticate host is served with its own CA-issued certificate (the chain verified).
      const auth = await get(port, 'auth.test', root);
      expect(auth.serial).not.toBe(app.serial);
      // Files 0600, directories 0700.
      const stored = new AutocertStorage(dir, pebble.directoryUrl);
      expect(statSync(stored.certificatePath('app.test')).mode & 0o777).toBe(0o600);
      expect(statSync(stored.accountKeyPath).mode & 0o777).toBe(0o600);
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      // Normal ALPN is undisturbed by the acme-tls/1 answering: h2 and http/1.1 as before, and a
      // client offering acme-tls/1 when no challenge is pending negotiates like any other.
      expect(await alpn(port, 'app.test', ['h2', 'http/1.1'], root)).toBe('h2');
      expect(await alpn(port, 'app.test', ['http/1.1'], root)).toBe('http/1.1');
      expect(await alpn(port, 'app.test', ['acme-tls/1', 'http/1.1'], root)).toBe('http/1.1');
      const orders = pebble.orders();
      expect(orders).toBe(2);
      await svc.close();

      svc = await start(dir);
      // Served from the directory at once: no wait, no new order.
      expect(svc.autocert!.get('app.test')).toBeDefined();
      const again = await get(port, 'app.test', root);
      expect(again.serial).toBe(app.serial);
      expect(pebble.orders()).toBe(orders);
    } finally {
      await svc.close();
    }
  }, 60_000);

  // Pebble 2.4 (Debian) drops the TLS Feature extension of the CSR from the certificate it issues,
  // so this checks that a must-staple order goes through; that the CSR carries status_request is
  // checked in test/runtime/tls/acme/csr.test.ts.
  it('orders with a must-staple certificate request when autocert_must_staple is set', async () => {
    const svc = await start(newDir(), { autocert_must_staple: true });
    try {
      await svc.autocert!.whenIssued('app.test');
      const a = await get(port, 'app.test', root);
      expect(a.status).toBe(200);
      expect(typeof hasMustStaple(a.pem)).toBe('boolean');
    } finally {
      await svc.close();
    }
  }, 60_000);

  // Pebble validates on the first instance's port only: when the second one holds a name's lock,
  // its challenge answer (a file in the shared directory) is served by the first.
  it('two instances sharing autocert_dir: one order per name, both serve its result', async () => {
    const dir = newDir();
    const before = pebble.orders();
    const port2 = await freePort();
    const a = start(dir);
    const b = start(dir, { address: `127.0.0.1:${port2}` });
    const [one, two] = await Promise.all([a, b]);
    try {
      await Promise.all(['app.test', 'auth.test'].flatMap((n) => [one.autocert!.whenIssued(n), two.autocert!.whenIssued(n)]));
      expect(pebble.orders() - before).toBe(2);
      const x = await get(port, 'app.test', root);
      const y = await get(port2, 'app.test', root);
      expect(y.status).toBe(200);
      expect(y.serial).toBe(x.serial);
      expect((await get(port2, 'auth.test', root)).serial).toBe((await get(port, 'auth.test', root)).serial);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  }, 60_000);

  it('swaps a renewed certificate in while requests keep flowing', async () => {
    let renewNow = false;
    const svc = await start(newDir(), {}, { renewalTime: (notBefore, notAfter) => (renewNow ? notBefore : notAfter) });
    try {
      const first = await svc.autocert!.whenIssued('app.test');
      const agent = new (await import('node:https')).Agent({ keepAlive: true, maxSockets: 1 });
      const before = await get(port, 'app.test', root, agent);
      let stop = false;
      const statuses: number[] = [];
      const flowing = (async () => {
        while (!stop) statuses.push((await get(port, 'app.test', root, agent)).status);
      })();
      renewNow = true;
      const renewed = await svc.autocert!.whenIssued('app.test', first);
      renewNow = false;
      stop = true;
      await flowing;
      expect(statuses.length).toBeGreaterThan(0);
      expect(statuses.every((s) => s === 200)).toBe(true);
      // A new connection gets the renewed certificate.
      const after = await get(port, 'app.test', root);
      expect(after.serial).not.toBe(before.serial);
      expect(renewed.chainPem).toContain(after.pem.split('\n')[1]!.slice(0, 40));
      agent.destroy();
    } finally {
      await svc.close();
    }
  }, 60_000);
});

describeWithCommands(['pebble', 'pebble-challtestsrv'], 'autocert with External Account Binding (pebble)', () => {
  let pebble: Pebble;
  let port: number;
  let up: Upstream;
  const cfg = configDir();
  const dirs: string[] = [];
  // TEST ONLY MAC key (pebble's example key for kid-1).
  const MAC = 'zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W';
  beforeAll(async () => {
    port = await freePort();
    pebble = await startPebble({ tlsPort: port, eab: { 'kid-1': MAC } });
    up = await startUpstream(echo);
  }, 30_000);
  afterAll(async () => {
    await up?.close();
    await pebble?.close();
    cfg.remove();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const start = (mac: string, logs: Record<string, unknown>[]) => {
    const d = mkdtempSync(join(tmpdir(), 'svc-autocert-eab-'));
    dirs.push(d);
    const { insecure_server: _i, ...base } = BASE_SETTINGS;
    cfg.writeRaw(
      stringify({
        ...base,
        address: `127.0.0.1:${port}`,
        autocert: true,
        autocert_ca: pebble.directoryUrl,
        autocert_trusted_ca_file: pebble.apiCaFile,
        autocert_dir: d,
        autocert_eab_key_id: 'kid-1',
        autocert_eab_mac_key: mac,
        routes: [{ from: 'https://app.test', to: up.url, allow_public_unauthenticated_access: true }],
      }),
    );
    return run({ configPath: cfg.path, watch: false, grpcListen: { host: '127.0.0.1', port: 0 }, log: (e) => logs.push(e), autocertTiming: { pollMs: 200 } });
  };

  it('registers with the right MAC key and obtains a certificate', async () => {
    const svc = await start(MAC, []);
    try {
      const c = await svc.autocert!.whenIssued('app.test');
      expect(c.chainPem).toContain('BEGIN CERTIFICATE');
    } finally {
      await svc.close();
    }
  }, 30_000);

  it('logs a wrong MAC key once, naming the name and the reason, and keeps serving', async () => {
    const logs: Record<string, unknown>[] = [];
    const svc = await start(MAC.replace(/^z/, 'y'), logs);
    try {
      const failed = () => logs.filter((l) => l['msg'] === 'autocert: cannot obtain a certificate' && l['level'] === 'error' && l['name'] === 'app.test');
      for (let i = 0; i < 200 && failed().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(failed()).toHaveLength(1);
      const line = failed()[0]!;
      expect(line).toMatchObject({ name: 'app.test', kind: 'account-refused' });
      expect(String(line['help'])).toMatch(/autocert_eab_mac_key/);
      expect(svc.autocert!.get('app.test')).toBeUndefined();
    } finally {
      await svc.close();
    }
  }, 30_000);
});
