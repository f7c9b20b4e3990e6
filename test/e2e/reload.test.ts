/**
 * Atomic reload under load (docs/architecture.md §1): with a few hundred requests in flight, the config file
 * is rewritten 20 times, some of the rewrites invalid. Zero requests fail, and every response was
 * produced by exactly one plan: the checksum svc names (test mode) is a plan that was valid, and
 * the upstream request it made carries that plan's own `X-Version` header.
 */
import { Agent, request } from 'node:http';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { BASE_SETTINGS, compileText } from '../support/compile-text.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

describe('svc run: reload under load', () => {
  let up: Upstream;
  let svc: Running;
  const cfg = configDir();

  const configText = (version: number) =>
    stringify({
      ...BASE_SETTINGS,
      address: '127.0.0.1:8443',
      routes: [
        { name: 'app', from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true, set_request_headers: { 'X-Version': String(version) } },
        // Routes come and go between versions; the app route stays.
        ...(version % 2 === 0 ? [{ name: 'extra', from: 'https://extra.example.com', to: up.url, allow_public_unauthenticated_access: true }] : []),
      ],
    });

  beforeAll(async () => {
    up = await startUpstream(echo);
    cfg.writeRaw(configText(0));
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, exposeChecksum: true });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  it('serves every request from exactly the old or the new plan, and drops none', async () => {
    const versionOf = new Map<string, number>([[svc.store.current.plan.checksum, 0]]);
    const port = svc.listening.address.port;
    const agent = new Agent({ keepAlive: true, maxSockets: 300 });
    const failures: string[] = [];
    const mismatches: string[] = [];
    const seen = new Set<string>();
    let done = 0;
    let stop = false;

    const one = () =>
      new Promise<void>((resolve) => {
        const req = request({ host: '127.0.0.1', port, path: '/x', agent, headers: { host: 'app.example.com' } }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => {
            done++;
            const checksum = String(res.headers['x-svc-plan-checksum']);
            seen.add(checksum);
            if (res.statusCode !== 200) failures.push(`status ${res.statusCode}`);
            else {
              const version = (JSON.parse(body) as { headers: Record<string, string> }).headers['x-version'];
              const expected = versionOf.get(checksum);
              if (expected === undefined || String(expected) !== version) mismatches.push(`${checksum} sent version ${version}`);
            }
            resolve();
          });
        });
        req.on('error', (e) => {
          failures.push(e.message);
          resolve();
        });
        req.end();
      });
    // 250 loops, each keeping one request in flight.
    const loops = Array.from({ length: 250 }, async () => {
      while (!stop) await one();
    });

    let valid = 0;
    for (let i = 1; i <= 20; i++) {
      await new Promise((r) => setTimeout(r, 150));
      if (i % 4 === 0) {
        cfg.writeRaw(i % 8 === 0 ? 'routes: [\n  - from: [broken' : `${configText(i)}\nunknown_setting: 1\n`);
        continue;
      }
      const text = configText(i);
      const checksum = compileText(text, cfg.path).plan!.checksum;
      // Every valid version is known before svc can serve it.
      versionOf.set(checksum, i);
      cfg.writeRaw(text);
      valid++;
      await expect.poll(() => svc.store.current.plan.checksum, { timeout: 5000, interval: 20 }).toBe(checksum);
    }
    const lastValid = svc.store.current.plan.checksum;
    // The last write may be an invalid one: it is refused and the last valid plan stays.
    cfg.writeRaw('routes: [\n  - from: [broken');
    await expect.poll(() => svc.lastReload()?.ok, { timeout: 5000, interval: 20 }).toBe(false);
    stop = true;
    await Promise.all(loops);
    agent.destroy();

    expect(failures).toEqual([]);
    expect(mismatches).toEqual([]);
    expect(done).toBeGreaterThan(1000);
    expect(valid).toBe(15);
    expect(seen.size).toBeGreaterThan(5);
    expect(svc.store.current.plan.checksum).toBe(lastValid);
    // Every retired generation was released once its requests were done.
    await expect.poll(() => [...svc.store.inFlight().keys()].every((n) => n === svc.store.current.number), { timeout: 5000 }).toBe(true);
  });
});
