/**
 * `svc run plan.json`: a plan compiled in CI is served as is; a plan edited by hand is refused at
 * start, and a changed plan file is swapped in on reload while a broken one keeps the old plan.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../cli/main.ts';
import { run, type Running } from '../../runtime/process/run.ts';
import { RunError } from '../../runtime/process/load-plan.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

const quiet = { out: () => undefined, err: () => undefined };

function get(port: number): Promise<{ status: number; version: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false, headers: { host: 'app.example.com' } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, version: res.statusCode === 200 ? (JSON.parse(body) as { headers: Record<string, string> }).headers['x-version'] : undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('svc run PLAN', () => {
  let up: Upstream;
  let svc: Running;
  const cfg = configDir();
  const planPath = () => join(cfg.dir, 'plan.json');
  const compileVersion = async (v: string) => {
    cfg.write({ address: '127.0.0.1:8443' }, [{ from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true, set_request_headers: { 'X-Version': v } }]);
    expect(await main(['compile', '-config', cfg.path, '-o', planPath()], quiet)).toBe(0);
  };

  beforeAll(async () => {
    up = await startUpstream(echo);
    await compileVersion('1');
    svc = await run({ planPath: planPath(), listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 } });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  it('serves the compiled plan', async () => {
    expect(await get(svc.listening.address.port)).toEqual({ status: 200, version: '1' });
  });

  it('swaps in a recompiled plan file and keeps the old plan when the file is broken', async () => {
    await compileVersion('2');
    await expect.poll(async () => (await get(svc.listening.address.port)).version, { timeout: 10_000, interval: 100 }).toBe('2');
    writeFileSync(planPath(), readFileSync(planPath(), 'utf8').replace('"2"', '"3"'));
    await expect.poll(() => svc.lastReload()?.ok, { timeout: 10_000, interval: 50 }).toBe(false);
    expect(svc.lastReload()).toMatchObject({ ok: false, error: expect.stringContaining('checksum mismatch') });
    expect(await get(svc.listening.address.port)).toEqual({ status: 200, version: '2' });
  });

  it('refuses to start from a plan edited by hand', async () => {
    const edited = join(cfg.dir, 'edited.json');
    writeFileSync(edited, readFileSync(planPath(), 'utf8').replace('"2"', '"9"'));
    await expect(run({ planPath: edited, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false })).rejects.toBeInstanceOf(RunError);
  });
});
