/**
 * SVC3542 at start: `svc run` with a configured certificate that covers one route host and not
 * another says so in a JSON warn line before it listens (code, the route's `from`, the host and the
 * fix), and the uncovered host is indeed answered with a generated self-signed certificate while the
 * covered one gets the configured certificate. Served from a plan file, a certificate renewed in
 * place with one for other names is seen only by the runtime: it says which route host lost its
 * certificate.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { generateSelfSigned } from '../../runtime/tls/self-signed.ts';
import { configDir } from './support.ts';
import { SVC, spawnSvc, type SignalledSvc } from './svc-process.ts';

// TEST ONLY certificate for app.example.com and *.apps.example.com, and its key, from the golden case.
const CASE = join(import.meta.dirname, '../../fixtures/cases/route-host-without-certificate');
const server = { certPem: readFileSync(join(CASE, 'test-only-cert.pem'), 'utf8'), keyPem: readFileSync(join(CASE, 'test-only-key.pem'), 'utf8') };

/** The subject of the certificate svc serves for SNI `servername`. */
function servedSubject(port: number, servername: string): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false }, () => {
      const subject = s.getPeerCertificate().subject as unknown as Record<string, string>;
      s.end();
      resolve(subject);
    });
    s.once('error', reject);
  });
}

/** The JSON lines svc wrote so far. */
const linesOf = (svc: SignalledSvc): Record<string, unknown>[] =>
  svc
    .out()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

async function stop(svc: SignalledSvc | undefined): Promise<void> {
  if (svc && svc.child.exitCode === null && svc.child.signalCode === null) {
    svc.child.kill('SIGTERM');
    await svc.exited;
  }
}

describe('svc run: a route host no configured certificate covers', () => {
  const cfg = configDir();
  let svc: SignalledSvc | undefined;

  afterAll(async () => {
    await stop(svc);
    cfg.remove();
  });

  it('is warned about at start, and is what gets the self-signed certificate', async () => {
    const upstream = { to: 'http://127.0.0.1:9', allow_public_unauthenticated_access: true };
    cfg.writeTls(server, {}, [
      { from: 'https://app.example.com', ...upstream },
      { from: 'https://other.example.com', ...upstream },
    ]);
    svc = await spawnSvc(cfg.path, ['--workers', '1', '--shutdown-delay', '0']);
    const lines = linesOf(svc);
    const warnings = lines.filter((l) => l['code'] === 'SVC3542');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 'warn', name: 'route-host-without-certificate', path: 'routes[1].from' });
    expect(String(warnings[0]!['msg'])).toContain('`other.example.com`');
    expect(String(warnings[0]!['help'])).toContain('add a certificate covering `other.example.com`');
    expect(lines.indexOf(warnings[0]!)).toBeLessThan(lines.findIndex((l) => l['msg'] === 'listening'));

    expect((await servedSubject(svc.port, 'app.example.com'))['CN']).toBe('app.example.com');
    const generated = await servedSubject(svc.port, 'other.example.com');
    expect(generated).toMatchObject({ CN: 'other.example.com', O: 'svc self-signed' });
  });
});

describe('svc run PLAN: a certificate renewed in place for other names', () => {
  const cfg = configDir();
  let svc: SignalledSvc | undefined;

  afterAll(async () => {
    await stop(svc);
    cfg.remove();
  });

  it('is told at the reload: the route host it no longer covers gets a self-signed certificate', async () => {
    const upstream = { to: 'http://127.0.0.1:9', allow_public_unauthenticated_access: true };
    cfg.writeTls(server, {}, [{ from: 'https://app.example.com', ...upstream }]);
    const plan = `${cfg.dir}/plan.json`;
    execFileSync(process.execPath, [SVC, 'compile', '-config', cfg.path, '-o', plan], { stdio: 'ignore' });
    svc = await spawnSvc(plan, ['--workers', '1', '--shutdown-delay', '0'], { plan: true });
    expect(linesOf(svc).filter((l) => l['host'] !== undefined && String(l['msg']).startsWith('no certificate as read'))).toEqual([]);
    expect((await servedSubject(svc.port, 'app.example.com'))['O']).toBeUndefined();

    // TEST ONLY: a certificate and key for another name, written over the ones the plan names.
    const other = await generateSelfSigned('other.example.com');
    cfg.file('server.key', other.keyPem);
    cfg.file('server.pem', other.certPem);
    const deadline = Date.now() + 30_000;
    let told: Record<string, unknown> | undefined;
    while (!told && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      told = linesOf(svc).find((l) => String(l['msg']).startsWith('no certificate as read covers a route host'));
    }
    expect(told).toMatchObject({ level: 'warn', host: 'app.example.com', certificates: ['other.example.com'] });
    expect(String(told!['help'])).toContain('install a certificate covering `app.example.com`');
    expect(await servedSubject(svc.port, 'app.example.com')).toMatchObject({ CN: 'app.example.com', O: 'svc self-signed' });
  });
});
