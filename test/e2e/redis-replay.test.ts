/**
 * Replay of an old sealed session value (docs/security.md S39; docs/scale-out.md "What a Redis writer can
 * and cannot do"), end to end: a real `svc run` on Redis and a real OIDC provider. Someone with
 * write access to Redis saves the sealed session value while the user is signed in, and writes it
 * back after the user signs out (over the revocation, or after deleting it): svc keeps refusing the
 * cookie (a sign-in redirect, never 200 from the upstream).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DevIdp } from '../../demo/dev-idp.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { HttpBrowser } from '../support/http-browser.ts';
import { startRedis, type RedisProcess } from '../support/redis-server.ts';
import { describeWithCommands } from '../support/system.ts';
import { freePort, startLocalhostIdp } from './auth-support.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

const SVC = join(import.meta.dirname, '../../bin/svc');
const PASSWORD = 'test-only-redis-password';

function get(port: number, host: string, cookie: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false, headers: { host, cookie, accept: 'text/html' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', reject);
    req.end();
  });
}

describeWithCommands(['redis-server'], 'svc on Redis against a Redis writer replaying a signed-out session', () => {
  let idp: DevIdp;
  let up: Upstream;
  let redis: RedisProcess;
  let raw: Redis;
  let port = 0;
  let child: ChildProcess | undefined;
  let log = '';
  const cfg = configDir();

  beforeAll(async () => {
    port = await freePort();
    redis = await startRedis({ password: PASSWORD });
    raw = new Redis({ port: redis.port, host: '127.0.0.1', password: PASSWORD, db: 3 });
    idp = await startLocalhostIdp(port);
    up = await startUpstream(echo);
    const origin = (name: string) => `http://${name}.localhost:${port}`;
    cfg.writeRaw(
      stringify({
        ...BASE_SETTINGS,
        cookie_secure: false,
        authenticate_service_url: origin('authenticate'),
        signout_redirect_url: `${origin('app')}/`,
        idp_provider_url: idp.issuer,
        idp_client_id: 'c',
        idp_client_secret: 's',
        databroker_storage_type: 'redis',
        databroker_storage_connection_string: `redis://:${PASSWORD}@127.0.0.1:${redis.port}/3`,
        routes: [{ from: `https://app.localhost:${port}`, to: up.url, policy: 'allow if domain is "example.com"' }],
      }),
    );
    child = spawn(process.execPath, [SVC, 'run', '--shutdown-delay', '0', '--grpc-listen', '127.0.0.1:0', '-config', cfg.path, '--workers', '1'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ADDRESS: `127.0.0.1:${port}` } });
    await new Promise<void>((resolve, reject) => {
      const onData = (c: Buffer) => {
        log += c.toString();
        if (/"msg":"listening"/.test(log)) resolve();
      };
      child!.stdout!.on('data', onData);
      child!.stderr!.on('data', onData);
      child!.once('exit', (code) => reject(new Error(`svc exited with ${code}: ${log}`)));
    });
  }, 90_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child!.once('exit', r));
    }
    raw?.disconnect();
    await up?.close();
    await idp?.close();
    await redis?.stop();
    cfg.remove();
  });

  it('a sealed session value saved before sign-out and written back does not revive the session', async () => {
    const browser = new HttpBrowser((url) => (url.hostname.endsWith('.localhost') ? { port } : url.port === String(idp.port) ? { port: idp.port } : undefined));
    const hops = await browser.signIn(`http://app.localhost:${port}/`, 'alice@example.com');
    expect(hops[hops.length - 1]!.status).toBe(200);
    const cookie = `_svc=${browser.cookies('app.localhost')['_svc']}`;
    const host = `app.localhost:${port}`;
    expect(await get(port, host, cookie)).toBe(200);

    // The writer saves the session's sealed value (the only session key in this database).
    const [key] = await raw.keys('svc:*:{*}:s');
    expect(key).toBeDefined();
    const saved = { value: (await raw.getBuffer(key!))!, ttl: await raw.pttl(key!) };

    const confirm = await browser.request(`http://app.localhost:${port}/.svc/signout/`);
    expect((await browser.submitForm(confirm))[0]!.status).toBe(302);
    expect(await get(port, host, cookie)).toBe(302);

    // Written back over the revocation: refused, and the revocation written again.
    await raw.set(key!, saved.value, 'PX', saved.ttl);
    expect(await get(port, host, cookie)).toBe(302);
    // (Logged by the primary, whose stdout may arrive a little after the worker's answer.)
    for (const started = Date.now(); !log.includes('older than one this process has seen'); ) {
      if (Date.now() - started > 5_000) throw new Error(`the replay was not logged: ${log}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    // The revocation deleted and the old value written back: still refused.
    await raw.del(key!);
    await raw.set(key!, saved.value, 'PX', saved.ttl);
    expect(await get(port, host, cookie)).toBe(302);
    expect(await get(port, host, cookie)).toBe(302);
  }, 60_000);
});
