/**
 * Load balancing with health checks through a running svc: an upstream failing its health check
 * gets no traffic and comes back when healthy; with no healthy upstream svc answers 503 (fail
 * closed, no panic mode). Real upstream servers on loopback.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { configDir, startUpstream, type Upstream } from './support.ts';

describe('svc run: health-checked upstreams', () => {
  const healthy = { a: true, b: true };
  let a: Upstream;
  let b: Upstream;
  let svc: Running;
  const cfg = configDir();

  const upstream = (name: 'a' | 'b') => (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    if (req.url === '/health') {
      res.statusCode = healthy[name] ? 200 : 500;
      res.end();
      return;
    }
    res.end(name);
  };

  beforeAll(async () => {
    a = await startUpstream(upstream('a'));
    b = await startUpstream(upstream('b'));
    cfg.write({ address: '127.0.0.1:8443' }, [
      {
        from: 'https://app.example.com',
        to: [a.url, b.url],
        allow_public_unauthenticated_access: true,
        health_checks: [{ timeout: '1s', interval: '50ms', unhealthy_threshold: 1, healthy_threshold: 1, http_health_check: { path: '/health' } }],
      },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    await a?.close();
    await b?.close();
    cfg.remove();
  });

  const get = () =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: svc.listening.address.port, path: '/', agent: false, headers: { host: 'app.example.com' } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
  const bodies = async (n: number) => {
    const out = new Set<string>();
    for (let i = 0; i < n; i++) {
      const r = await get();
      out.add(r.status === 200 ? r.body : String(r.status));
    }
    return [...out].sort();
  };

  it('balances over both healthy upstreams', async () => {
    await expect.poll(() => bodies(10), { timeout: 10_000 }).toEqual(['a', 'b']);
  });

  it('sends nothing to an unhealthy upstream, and takes it back when healthy', async () => {
    healthy.b = false;
    await expect.poll(() => bodies(10), { timeout: 10_000 }).toEqual(['a']);
    healthy.b = true;
    await expect.poll(() => bodies(10), { timeout: 10_000 }).toEqual(['a', 'b']);
  });

  it('answers 503 when no upstream is healthy', async () => {
    healthy.a = false;
    healthy.b = false;
    await expect.poll(() => bodies(4), { timeout: 10_000 }).toEqual(['503']);
  });
});
