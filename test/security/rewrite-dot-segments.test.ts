/**
 * docs/security.md S54, against a real `svc run` and a real upstream that reports the raw path it received:
 * a rewrite or the `to` join must not turn the canonical path back into one with dot or empty
 * segments, which the upstream would resolve to a path policy never judged (docs/decisions.md §6
 * step 5). The rule checked for every variant: a request is either refused with 400, or the path
 * the upstream received is normal (no `.`/`..` segment, also as `%2E`, no `//`) and under the
 * route's forwarded prefix. Raw sockets, so that no client library normalizes the target first.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { configDir, startUpstream, type Upstream } from '../e2e/support.ts';

/** Sends one request and returns the status line's code. */
function get(port: number, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(`GET ${target} HTTP/1.1\r\nHost: app.example.com\r\nAccept: application/json\r\nConnection: close\r\n\r\n`));
    let out = '';
    s.on('data', (c) => (out += c.toString('latin1')));
    s.on('error', reject);
    s.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(out)?.[1] ?? 0)));
  });
}

/** A path an upstream reads as written: no empty segment and no dot segment in any spelling. */
function isNormal(path: string): boolean {
  return !path.includes('//') && !path.split('/').some((s) => /^(?:\.|%2e){1,2}$/i.test(s));
}

describe('issue 13 §4: rewrites that create dot segments', () => {
  let up: Upstream;
  let svc: Running;
  const received: string[] = [];
  const cfg = configDir();

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      received.push(req.url ?? '');
      res.end('ok');
    });
    cfg.write({ address: '127.0.0.1:8443' }, [
      // The upstream's `/admin/` is reachable only through this route, for admins.
      { from: 'https://app.example.com', prefix: '/app/admin/', prefix_rewrite: '/admin/', to: up.url, policy: 'allow if groups has "admins"' },
      // Everything else under `/app` is public, with the prefix stripped.
      { from: 'https://app.example.com', prefix: '/app', prefix_rewrite: '/', to: up.url, allow_public_unauthenticated_access: true },
      { from: 'https://app.example.com', prefix: '/api', prefix_rewrite: '/v1/', to: `${up.url}/base/`, allow_public_unauthenticated_access: true },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  const port = () => svc.listening.address.port;

  it.each(['/app%2e%2e/admin/x', '/app../admin/x', '/app%2E%2e/admin/', '/app./admin/x', '/app%2e/admin/x', '/app..', '/api%2e%2e/x', '/api../x'])(
    'a dot right after the prefix is not forwarded as a dot segment: %s',
    async (target) => {
      const n = received.length;
      expect(await get(port(), target)).toBe(400);
      expect(received.slice(n)).toEqual([]);
    },
  );

  it('the restricted upstream path stays behind its policy', async () => {
    expect(await get(port(), '/app/admin/x')).toBe(401);
  });

  it.each([
    ['/app/x/y', '/x/y'],
    ['/app', '/'],
    ['/app...x', '/...x'],
    ['/api/users', '/base/v1/users'],
    ['/api', '/base/v1/'],
  ])('an ordinary request is forwarded normal and under the forwarded prefix: %s', async (target, expected) => {
    const n = received.length;
    expect(await get(port(), target)).toBe(200);
    expect(received.slice(n)).toEqual([expected]);
  });

  it('every variant is refused or reaches the upstream normal and under its forwarded prefix', async () => {
    const dots = ['.', '..', '%2e', '%2E%2e', '...', '.x'];
    const targets = ['/app', '/api'].flatMap((p) => dots.flatMap((d) => [`${p}${d}`, `${p}${d}/`, `${p}${d}/admin/x`, `${p}/${d}/x`, `${p}//${d}//x`]));
    for (const target of targets) {
      const n = received.length;
      const status = await get(port(), target);
      const got = received.slice(n);
      if (status === 400) expect(got, target).toEqual([]);
      else if (status === 200) {
        expect(got.length, target).toBe(1);
        expect(isNormal(got[0]!), `${target} → ${got[0]}`).toBe(true);
        expect(got[0]!.startsWith(target.startsWith('/api') ? '/base/v1' : '/'), `${target} → ${got[0]}`).toBe(true);
      } else expect([401, 404], target).toContain(status);
    }
  });
});
