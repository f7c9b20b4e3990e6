/**
 * docs/security.md S55, against a real `svc run` and a real upstream that reports the raw path it received:
 * paths an upstream reads differently from svc must not reach the public catch-all behind a
 * restricted prefix. Java (`;` path parameters, `/..;/`) and case-insensitive servers read
 * `/admin;x`, `/..;/admin` and `/ADMIN` as `/admin`. The rules checked: a raw `;` in the path is
 * refused (400) unless the route chosen opts in with `allow_path_parameters`, and never forwarded
 * otherwise; with `path_case: insensitive` on the restricted route, every case variant of its
 * prefix is judged by its policy. Raw sockets, so that no client library rewrites the target.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { configDir, startUpstream, type Upstream } from '../e2e/support.ts';

/** Sends one request for `host` and returns the status code. */
function get(port: number, host: string, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\nAccept: application/json\r\nConnection: close\r\n\r\n`));
    let out = '';
    s.on('data', (c) => (out += c.toString('latin1')));
    s.on('error', reject);
    s.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(out)?.[1] ?? 0)));
  });
}

/** Every spelling of the path `/admin/x` that Java or a case-insensitive server reads as it. */
const VARIANTS = ['/admin;x/x', '/admin;jsessionid=1/x', '/..;/admin/x', '/public/..;/admin/x', '/public;/../admin/x', '/ADMIN/x', '/Admin/x', '/aDmIn;x/x'];

describe('issue 13 §5: paths that upstreams read differently', () => {
  let up: Upstream;
  let svc: Running;
  const received: string[] = [];
  const cfg = configDir();

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      received.push(req.url ?? '');
      res.end('ok');
    });
    const restricted = { prefix: '/admin', to: up.url, policy: 'allow if groups has "admins"' };
    const open = { to: up.url, allow_public_unauthenticated_access: true };
    cfg.write({ address: '127.0.0.1:8443' }, [
      // Case-sensitive as written: `;` is refused, but case variants reach the catch-all.
      { from: 'https://plain.example.com', ...restricted },
      { from: 'https://plain.example.com', ...open },
      // The fix the compiler's warning points to: the restricted prefix folds case.
      { from: 'https://app.example.com', ...restricted, path_case: 'insensitive' },
      { from: 'https://app.example.com', ...open },
      // A host whose public route takes path parameters (a Java app that needs `;jsessionid`).
      { from: 'https://java.example.com', ...restricted, path_case: 'insensitive' },
      { from: 'https://java.example.com', ...open, allow_path_parameters: true },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  const port = () => svc.listening.address.port;

  it.each(VARIANTS)('no variant of the restricted prefix reaches the upstream anonymously: %s', async (target) => {
    const n = received.length;
    const status = await get(port(), 'app.example.com', target);
    expect([400, 401]).toContain(status);
    expect(received.slice(n)).toEqual([]);
  });

  it.each(VARIANTS.filter((t) => t.includes(';')))('a raw `;` is refused even where case is sensitive: %s', async (target) => {
    const n = received.length;
    expect(await get(port(), 'plain.example.com', target)).toBe(400);
    expect(received.slice(n)).toEqual([]);
  });

  it('without path_case: insensitive, a case variant is public (the documented default)', async () => {
    const n = received.length;
    expect(await get(port(), 'plain.example.com', '/ADMIN/x')).toBe(200);
    expect(received.slice(n)).toEqual(['/ADMIN/x']);
  });

  it('a route that opts in takes and forwards path parameters; the restricted prefix still judges its own', async () => {
    const n = received.length;
    expect(await get(port(), 'java.example.com', '/files/a;v=2')).toBe(200);
    expect(received.slice(n)).toEqual(['/files/a;v=2']);
    for (const target of VARIANTS) {
      const m = received.length;
      const status = await get(port(), 'java.example.com', target);
      expect([400, 401], target).toContain(status);
      expect(received.slice(m), target).toEqual([]);
    }
  });

  it('a `;` in the query is ordinary', async () => {
    const n = received.length;
    expect(await get(port(), 'app.example.com', '/x?a=1;b=2')).toBe(200);
    expect(received.slice(n)).toEqual(['/x?a=1;b=2']);
  });
});
