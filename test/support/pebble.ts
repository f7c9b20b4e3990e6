/**
 * A real ACME CA for tests: Debian's `pebble`, with `pebble-challtestsrv` as its DNS server
 * answering 127.0.0.1 for every name, so pebble validates challenges against svc on loopback.
 * Pebble's own HTTPS certificate is a TEST key pair generated here (never used elsewhere).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:https';
import { issue, makeCa } from '../runtime/tls/pki.ts';
import { BASE_SETTINGS } from './compile-text.ts';
import { freePort } from './ports.ts';

export interface Pebble {
  readonly directoryUrl: string;
  /** The CA that signed pebble's own HTTPS certificate (for `autocert_trusted_ca_file`). */
  readonly apiCaFile: string;
  readonly apiCaPem: string;
  /** The root pebble issues under (fetched from its management interface). */
  root(): Promise<string>;
  /** How many orders pebble has been asked for since it started. */
  orders(): number;
  /** Pebble's output so far. */
  output(): string;
  close(): Promise<void>;
}

export interface PebbleOptions {
  /** Where pebble connects for TLS-ALPN-01 (svc's HTTPS port). */
  readonly tlsPort: number;
  /** Where pebble connects for HTTP-01. */
  readonly httpPort?: number;
  /** EAB key ids and MAC keys; EAB becomes required. */
  readonly eab?: Readonly<Record<string, string>>;
}

/** Ports for pebble, its DNS server and the svc it validates (test/support/ports.ts: safe beside parallel files). */
export { freePort };

function get(url: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    request(url, { ca, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: ${res.statusCode}`))));
    })
      .on('error', reject)
      .end();
  });
}

async function waitFor<T>(what: string, f: () => Promise<T>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await f();
    } catch (e) {
      if (Date.now() > end) throw new Error(`${what}: ${(e as Error).message}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export async function startPebble(options: PebbleOptions): Promise<Pebble> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-pebble-'));
  const ca = await makeCa('svc test pebble API CA (TEST ONLY)');
  const cert = await issue(ca, { cn: 'localhost', dns: ['localhost'] });
  writeFileSync(join(dir, 'cert.pem'), cert.certPem);
  writeFileSync(join(dir, 'key.pem'), cert.keyPem);
  const apiCaFile = join(dir, 'api-ca.pem');
  writeFileSync(apiCaFile, ca.certPem);
  const [api, management, dns, dnsManagement] = [await freePort(), await freePort(), await freePort(), await freePort()];
  writeFileSync(
    join(dir, 'pebble.json'),
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${api}`,
        managementListenAddress: `127.0.0.1:${management}`,
        certificate: join(dir, 'cert.pem'),
        privateKey: join(dir, 'key.pem'),
        httpPort: options.httpPort ?? (await freePort()),
        tlsPort: options.tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: options.eab !== undefined,
        ...(options.eab ? { externalAccountMACKeys: options.eab } : {}),
      },
    }),
  );
  let out = '';
  const procs: ChildProcess[] = [];
  const start = (cmd: string, args: string[], env: NodeJS.ProcessEnv = {}) => {
    const p = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout?.on('data', (c: Buffer) => (out += c.toString()));
    p.stderr?.on('data', (c: Buffer) => (out += c.toString()));
    procs.push(p);
  };
  start('pebble-challtestsrv', ['-defaultIPv4', '127.0.0.1', '-defaultIPv6', '', '-dns01', `127.0.0.1:${dns}`, '-http01', '', '-https01', '', '-tlsalpn01', '', '-management', `127.0.0.1:${dnsManagement}`]);
  start('pebble', ['-config', join(dir, 'pebble.json'), '-dnsserver', `127.0.0.1:${dns}`], { PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' });
  const directoryUrl = `https://localhost:${api}/dir`;
  await waitFor('pebble did not start', () => get(directoryUrl, ca.certPem));
  return {
    directoryUrl,
    apiCaFile,
    apiCaPem: ca.certPem,
    root: () => get(`https://localhost:${management}/roots/0`, ca.certPem),
    orders: () => out.split('\n').filter((l) => /\/order-plz/.test(l) && /POST/.test(l)).length,
    output: () => out,
    close: async () => {
      await Promise.all(
        procs.map(
          (p) =>
            new Promise<void>((r) => {
              if (p.exitCode !== null || p.signalCode !== null) return r();
              p.once('exit', () => r());
              p.kill('SIGTERM');
            }),
        ),
      );
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A svc config (as data) for the autocert tests: svc on 127.0.0.1:`port` with certificates from
 * `pebble` stored in `dir`, the authenticate host `auth.test` and one public route `app.test` →
 * `upstream`; `extra` settings win over these.
 */
export function autocertConfig(pebble: Pebble, port: number, dir: string, upstream: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const { insecure_server: _insecure, ...base } = BASE_SETTINGS;
  return {
    ...base,
    address: `127.0.0.1:${port}`,
    authenticate_service_url: 'https://auth.test',
    autocert: true,
    autocert_ca: pebble.directoryUrl,
    autocert_trusted_ca_file: pebble.apiCaFile,
    autocert_dir: dir,
    ...extra,
    routes: [{ from: 'https://app.test', to: upstream, allow_public_unauthenticated_access: true }],
  };
}

