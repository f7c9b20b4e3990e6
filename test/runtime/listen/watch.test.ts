/**
 * Reload of TLS files on change (spec §1.5), with chokidar on a real directory and real TLS
 * handshakes: a rewritten certificate is served to new connections; a broken file keeps the old
 * material in service and is reported.
 */
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import tls from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { TlsMaterialError } from '../../../runtime/listen/errors.ts';
import { loadTlsMaterial, secureContextOptions, type TlsMaterial } from '../../../runtime/listen/material.ts';
import { tlsFilesOf, watchTlsFiles, type TlsFileWatcher } from '../../../runtime/listen/watch.ts';
import { issue, makeCa, makeCrl } from './pki.ts';
import { compileBody, open, TempFiles } from './plan.ts';
import { closeServer, handshake, listen } from './tls-client.ts';

let files: TempFiles | undefined;
let watcher: TlsFileWatcher | undefined;
let server: tls.Server | undefined;
afterEach(async () => {
  await watcher?.close();
  await closeServer(server);
  files?.remove();
  watcher = undefined;
  server = undefined;
  files = undefined;
});

/** Resolves once `cond()` holds; fails after `ms`. */
async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const fp = (pem: string): string => new X509Certificate(pem).fingerprint256;

describe('watchTlsFiles', () => {
  it('serves a rewritten certificate to new connections, and keeps the old one when a new file is broken', async () => {
    files = new TempFiles();
    const ca = await makeCa('CA');
    const a = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com'] });
    const b = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com', 'b.example.com'] });
    const certFile = files.write('app.crt', a.certPem);
    const keyFile = files.write('app.key', a.keyPem);
    const body = compileBody({ certificates: [{ cert: certFile, key: keyFile }] }, [{ from: 'https://app.example.com', to: 'http://127.0.0.1:1', ...open }], files);
    expect(tlsFilesOf(body)).toEqual([certFile, keyFile]);

    const swaps: TlsMaterial[] = [];
    const errors: Error[] = [];
    const initial = await loadTlsMaterial(body);
    const servers: tls.Server[] = [];
    watcher = watchTlsFiles(body, initial, { onSwap: (m) => swaps.push(m), onError: (e) => errors.push(e), servers, debounceMs: 50 });
    const source = watcher;
    server = tls.createServer(secureContextOptions(body.settings, source), (s) => s.end('ok\n'));
    servers.push(server);
    const port = await listen(server);
    await watcher.ready();

    expect((await handshake(port, { servername: 'app.example.com' })).cert.fingerprint256).toBe(fp(a.certPem));

    // Rotate: key first, then certificate (a moment of mismatch the debounce absorbs or reports).
    writeFileSync(keyFile, b.keyPem);
    writeFileSync(certFile, b.certPem);
    await until(() => watcher?.current().certificates.entries[0]?.names.includes('b.example.com') === true);
    expect(swaps.length).toBeGreaterThanOrEqual(1);
    expect((await handshake(port, { servername: 'app.example.com' })).cert.fingerprint256).toBe(fp(b.certPem));
    // Clients without SNI get the server's default context, replaced on the swap too.
    expect((await handshake(port)).cert.fingerprint256).toBe(fp(b.certPem));
    // The new names count for the 421 rule.
    expect(watcher.current().certificates.servesHost('app.example.com', 'b.example.com')).toBe(true);

    const before = watcher.current();
    errors.length = 0;
    writeFileSync(certFile, '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n');
    await until(() => errors.length > 0);
    expect(errors[0]).toBeInstanceOf(TlsMaterialError);
    expect((errors[0] as TlsMaterialError).code).toBe('SVC_ERR_TLS_MATERIAL');
    expect(errors[0]?.message).toMatch(/^certificates\[0\]\.cert: /);
    expect(watcher.current()).toBe(before);
    expect((await handshake(port, { servername: 'app.example.com' })).cert.fingerprint256).toBe(fp(b.certPem));
  });

  it('reloads a changed CRL: a certificate revoked in the new file is refused', async () => {
    files = new TempFiles();
    const ca = await makeCa('Client CA');
    const server = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com'] });
    const alice = await issue(ca, { cn: 'alice', usage: 'client' });
    const crlFile = files.write('crl.pem', await makeCrl(ca, []));
    const body = compileBody(
      {
        certificates: [{ cert: files.write('s.crt', server.certPem), key: files.write('s.key', server.keyPem) }],
        client_ca_file: files.write('ca.pem', ca.certPem),
        client_crl_file: crlFile,
      },
      [{ from: 'https://app.example.com', to: 'http://127.0.0.1:1', ...open }],
      files,
    );
    const errors: Error[] = [];
    watcher = watchTlsFiles(body, await loadTlsMaterial(body), { onError: (e) => errors.push(e), debounceMs: 50 });
    await watcher.ready();
    const chain = [new X509Certificate(alice.certPem)];
    const route = body.routes[0]!;
    expect(watcher.current().clients.verify(route, chain)).toMatchObject({ valid: true });
    const first = watcher.current();
    writeFileSync(crlFile, await makeCrl(ca, [alice.serial]));
    await until(() => watcher?.current() !== first);
    expect(watcher.current().clients.verify(route, chain)).toMatchObject({ valid: false, reason: 'revoked' });
    expect(errors).toEqual([]);
  });

  it('reload() coalesces calls and reports a failed build without swapping', async () => {
    files = new TempFiles();
    const ca = await makeCa('CA');
    const a = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com'] });
    const certFile = files.write('app.crt', a.certPem);
    const body = compileBody({ certificates: [{ cert: certFile, key: files.write('app.key', a.keyPem) }] }, [{ from: 'https://app.example.com', to: 'http://127.0.0.1:1', ...open }], files);
    const errors: Error[] = [];
    const initial = await loadTlsMaterial(body);
    watcher = watchTlsFiles(body, initial, { onError: (e) => errors.push(e), debounceMs: 10_000 });
    await watcher.ready();
    const [r1, r2] = await Promise.all([watcher.reload(), watcher.reload()]);
    expect([r1, r2]).toEqual([true, true]);
    const current = watcher.current();
    expect(current).not.toBe(initial);
    expect(current.selfSigned).toBe(initial.selfSigned);
    files.remove();
    expect(await watcher.reload()).toBe(false);
    expect(watcher.current()).toBe(current);
    expect(errors[0]).toBeInstanceOf(TlsMaterialError);
  });
});
