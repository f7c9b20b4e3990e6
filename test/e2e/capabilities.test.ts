/**
 * Regression: settings svc run does not implement were accepted and silently ignored
 * (`dp_admin_address`, `services`, the gRPC listener).
 * Now `svc run` refuses to start on them, one error per setting naming it and where it was set,
 * whether it serves a config, a plan compiled from one, or runs workers; a reload to such a config
 * keeps the old plan and says why. The log settings it does implement (`log_level`,
 * `proxy_log_level`, `svc_debug`) are honoured, at start and on reload.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../cli/main.ts';
import { run, type Running } from '../../runtime/process/run.ts';
import { RunError } from '../../runtime/process/load-plan.ts';
import { freePort } from '../support/ports.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

const SVC = join(import.meta.dirname, '../../bin/svc');
const route = (to: string) => ({ from: 'https://app.example.com', to, allow_public_unauthenticated_access: true });

/** `file:line:col` of the value of top-level `key` in a YAML file. */
function located(path: string, key: string): string {
  const lines = readFileSync(path, 'utf8').split('\n');
  const i = lines.findIndex((l) => l.startsWith(`${key}:`));
  if (i < 0) throw new Error(`${key} not in ${path}`);
  const col = lines[i]!.slice(key.length + 1).search(/\S/) + key.length + 2;
  return `${path}:${i + 1}:${col}`;
}

function get(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false, headers: { host: 'app.example.com' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Each setting the issue names, as written in a config, and the key the error names. */
const IGNORED: readonly { readonly name: string; readonly settings: Record<string, unknown>; readonly key: string }[] = [
  { name: 'a data-plane admin listener', settings: { dp_admin_address: '127.0.0.1:9901' }, key: 'dp_admin_address' },
  { name: 'a directory service account', settings: { idp_service_account: 'c2VydmljZS1hY2NvdW50' }, key: 'idp_service_account' },
];

describe('svc run refuses settings it does not implement', () => {
  const cfg = configDir();
  afterAll(() => cfg.remove());

  it.each(IGNORED)('$name ($key): refused at start, named and located', async ({ settings, key }) => {
    cfg.write({ address: '127.0.0.1:8443', ...settings }, [route('http://127.0.0.1:9')]);
    const err = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false }).then(
      (r) => r.close().then(() => undefined),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RunError);
    expect((err as RunError).code).toBe('SVC_ERR_UNSUPPORTED_SETTING');
    expect((err as RunError).message.split('\n')).toContainEqual(expect.stringMatching(new RegExp(`^${located(cfg.path, key)}: error SVC_ERR_UNSUPPORTED_SETTING ${key}: .+`)));
  });

  it('`svc run config.yaml` exits 1 with one JSON error line per setting, from the file and the environment', () => {
    cfg.write({ address: '127.0.0.1:8443', dp_admin_address: '127.0.0.1:9901', dp_bind_config_source_address: '10.0.0.1' }, [route('http://127.0.0.1:9')]);
    const res = spawnSync(process.execPath, [SVC, 'run', '--grpc-listen', '127.0.0.1:0', cfg.path, '--workers', '1'], { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', DP_ADMIN_PROFILE_PATH: '/tmp/profile' }, timeout: 30_000 });
    expect(res.status).toBe(1);
    // Not a terminal: every line is one JSON object (a log shipper reads why svc did not start).
    expect(res.stderr).toBe('');
    const lines = res.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l['level'], l['code'], l['name'], l['at']])).toEqual([
      ['error', 'SVC_ERR_UNSUPPORTED_SETTING', 'dp_admin_address', located(cfg.path, 'dp_admin_address')],
      ['error', 'SVC_ERR_UNSUPPORTED_SETTING', 'dp_bind_config_source_address', located(cfg.path, 'dp_bind_config_source_address')],
      ['error', 'SVC_ERR_UNSUPPORTED_SETTING', 'dp_admin_profile_path', 'env:DP_ADMIN_PROFILE_PATH'],
      ['error', 'SVC_ERR_UNSUPPORTED_SETTING', undefined, undefined],
    ]);
    expect(lines[0]!['msg']).toBe('data-plane bootstrap options are not implemented: svc run proxies in its own process, with no separate data plane to configure');
    expect(lines.at(-1)!['msg']).toBe('svc cannot start');
  });

  it('a config that does not compile: its errors as JSON lines, located; as text with SVC_DEBUG', () => {
    cfg.write({ address: '127.0.0.1:8443', no_such_setting: 1 }, [route('http://127.0.0.1:9')]);
    const args = [SVC, 'run', '--grpc-listen', '127.0.0.1:0', '-config', cfg.path, '--workers', '1'];
    const json = spawnSync(process.execPath, args, { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '' }, timeout: 30_000 });
    expect(json.status).toBe(1);
    expect(json.stderr).toBe('');
    const lines = json.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ level: 'error', code: expect.stringMatching(/^SVC\d{4}$/), name: expect.any(String), at: expect.stringMatching(/config\.yaml:\d+:\d+$/), msg: expect.stringContaining('no_such_setting') });
    expect(lines.at(-1)).toMatchObject({ level: 'error', code: 'SVC_ERR_CONFIG_INVALID', msg: 'svc cannot start' });
    const text = spawnSync(process.execPath, args, { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', SVC_DEBUG: 'true' }, timeout: 30_000 });
    expect(text.status).toBe(1);
    expect(text.stderr).toMatch(/config\.yaml:\d+:\d+: error SVC\d{4} [a-z-]+: .*no_such_setting/);
    expect(text.stderr).toContain('error SVC_ERR_CONFIG_INVALID: svc cannot start');
  });

  it('`svc run config.yaml` with SVC_DEBUG: one error line per setting as text on standard error', () => {
    cfg.write({ address: '127.0.0.1:8443', dp_admin_address: '127.0.0.1:9901', dp_bind_config_source_address: '10.0.0.1' }, [route('http://127.0.0.1:9')]);
    const res = spawnSync(process.execPath, [SVC, 'run', '--grpc-listen', '127.0.0.1:0', cfg.path, '--workers', '1'], { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', DP_ADMIN_PROFILE_PATH: '/tmp/profile', SVC_DEBUG: 'true' }, timeout: 30_000 });
    expect(res.status).toBe(1);
    const errors = res.stderr.split('\n').filter((l) => l.includes('error SVC_ERR_UNSUPPORTED_SETTING'));
    expect(errors).toEqual([
      `${located(cfg.path, 'dp_admin_address')}: error SVC_ERR_UNSUPPORTED_SETTING dp_admin_address: data-plane bootstrap options are not implemented: svc run proxies in its own process, with no separate data plane to configure`,
      expect.stringMatching(new RegExp(`^${located(cfg.path, 'dp_bind_config_source_address')}: error SVC_ERR_UNSUPPORTED_SETTING dp_bind_config_source_address: `)),
      expect.stringMatching(/^env:DP_ADMIN_PROFILE_PATH: error SVC_ERR_UNSUPPORTED_SETTING dp_admin_profile_path: /),
      'error SVC_ERR_UNSUPPORTED_SETTING: svc cannot start',
    ]);
    expect(res.stdout).not.toContain('listening');
  });

  it('with workers, the primary refuses before starting any', () => {
    cfg.write({ address: '127.0.0.1:8443', dp_admin_address: '127.0.0.1:9901' }, [route('http://127.0.0.1:9')]);
    const res = spawnSync(process.execPath, [SVC, 'run', '--grpc-listen', '127.0.0.1:0', '-config', cfg.path, '--workers', '2'], { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '' }, timeout: 30_000 });
    expect(res.status).toBe(1);
    expect(res.stdout).toContain(`"code":"SVC_ERR_UNSUPPORTED_SETTING","name":"dp_admin_address","at":${JSON.stringify(located(cfg.path, 'dp_admin_address'))}`);
    expect(res.stdout).not.toContain('listening');
  });

  it('a plan compiled from such a config is refused too, located in the config it came from', async () => {
    cfg.write({ address: '127.0.0.1:8443', dp_admin_address: '127.0.0.1:9901' }, [route('http://127.0.0.1:9')]);
    const planPath = join(cfg.dir, 'plan.json');
    // svc compile still compiles it (exit 0), noting what svc run would refuse.
    const notes: string[] = [];
    expect(await main(['compile', '-config', cfg.path, '-o', planPath], { out: () => undefined, err: (s) => notes.push(s) })).toBe(0);
    expect(notes.join('')).toContain(`${located(cfg.path, 'dp_admin_address')}: note: dp_admin_address is not supported by svc run yet: `);
    const err = await run({ planPath, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunError);
    const line = `${located(cfg.path, 'dp_admin_address')}: error SVC_ERR_UNSUPPORTED_SETTING dp_admin_address: data-plane bootstrap options are not implemented: svc run proxies in its own process, with no separate data plane to configure`;
    expect((err as RunError).message).toBe(line);
    // `svc run plan.json`: the positional file is told to be a plan by its content.
    const stderr: string[] = [];
    process.env['SVC_DEBUG'] = 'true';
    try {
      expect(await main(['run', planPath, '--workers', '1'], { out: () => undefined, err: (t) => stderr.push(t) })).toBe(1);
    } finally {
      delete process.env['SVC_DEBUG'];
    }
    expect(stderr.join('')).toBe(`${line}\nerror SVC_ERR_UNSUPPORTED_SETTING: svc cannot start\n`);
  });

  it('usage: one file, positional or -config; an unreadable file exits 2', async () => {
    const err: string[] = [];
    const io = { out: () => undefined, err: (t: string) => err.push(t) };
    expect(await main(['run', cfg.path, '-config', cfg.path], io)).toBe(2);
    expect(await main(['run'], io)).toBe(2);
    expect(await main(['run', join(cfg.dir, 'missing.yaml')], io)).toBe(2);
    expect(err.join('')).toContain('missing.yaml');
  });
});

describe('svc run: a reload to a refused setting keeps the old plan', () => {
  let up: Upstream;
  let svc: Running;
  const cfg = configDir();

  beforeAll(async () => {
    up = await startUpstream(echo);
    cfg.write({ address: '127.0.0.1:8443' }, [route(up.url)]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  it('says why, and serves on', async () => {
    const before = svc.store.current.plan.checksum;
    cfg.write({ address: '127.0.0.1:8443', dp_admin_address: '127.0.0.1:9901' }, [route(up.url)]);
    const r = await svc.reload();
    expect(r).toEqual({ ok: false, error: `${located(cfg.path, 'dp_admin_address')}: error SVC_ERR_UNSUPPORTED_SETTING dp_admin_address: data-plane bootstrap options are not implemented: svc run proxies in its own process, with no separate data plane to configure` });
    expect(svc.store.current.plan.checksum).toBe(before);
    expect(await get(svc.listening.address.port)).toBe(200);
  });
});

describe('svc run honours log_level, proxy_log_level and svc_debug', () => {
  let up: Upstream;
  let child: ChildProcess | undefined;
  const cfg = configDir();

  beforeAll(async () => {
    up = await startUpstream(echo);
  });
  afterEach(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child!.once('exit', r));
    }
    child = undefined;
  });
  afterAll(async () => {
    await up?.close();
    cfg.remove();
  });

  /** Starts `svc run config.yaml` (positional) on a free port; resolves once it answers. */
  async function start(): Promise<{ port: number; out: () => string; err: () => string }> {
    const port = await freePort();
    let out = '';
    let err = '';
    child = spawn(process.execPath, [SVC, 'run', '--shutdown-delay', '0', '--grpc-listen', '127.0.0.1:0', cfg.path, '--listen', `127.0.0.1:${port}`, '--workers', '1'], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env['PATH'] ?? '' } });
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<never>((_, reject) => child!.once('exit', (code) => reject(new Error(`svc exited with ${code}: ${err}`))));
    // The `listening` line may be filtered out by the log level: poll the port instead.
    const answering = (async () => {
      for (;;) {
        try {
          await get(port);
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    })();
    await Promise.race([answering, exited]);
    return { port, out: () => out, err: () => err };
  }

  it('by default: svc info lines, access lines and the compiler warnings, JSON', async () => {
    cfg.write({ address: '127.0.0.1:8443' }, [route(up.url)]);
    const svc = await start();
    await get(svc.port);
    await expect.poll(svc.out, { timeout: 5_000 }).toMatch(/"level":"info","time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","service":"svc","msg":"request"/);
    expect(svc.out()).toMatch(/^\{"level":"info",.*"msg":"listening"/m);
    // BASE_SETTINGS writes secrets inline: the compiler warns, and svc run says so in a JSON line.
    expect(svc.out()).toMatch(/^\{"level":"warn",.*"code":"SVC3006","name":"inline-secret","at":"[^"]*config\.yaml:\d+:\d+","path":"shared_secret","msg":"`shared_secret` is written inline/m);
    expect(svc.out()).not.toContain('AQEBAQEB'); // never the secret itself
    expect(svc.err()).toBe('');
  });

  it('log_level: error keeps svc info lines out; access lines follow proxy_log_level', async () => {
    cfg.write({ address: '127.0.0.1:8443', log_level: 'error', proxy_log_level: 'info' }, [route(up.url)]);
    const svc = await start();
    await get(svc.port);
    await expect.poll(svc.out, { timeout: 5_000 }).toContain('"msg":"request"');
    expect(svc.out()).not.toContain('"msg":"listening"');
    // Only access lines: svc's own info lines (listening) are below log_level.
    expect(svc.out().trim().split('\n').filter((l) => !l.includes('"msg":"request"'))).toEqual([]);
  });

  it('proxy_log_level: error keeps access lines out, and a reload to info brings them back', async () => {
    cfg.write({ address: '127.0.0.1:8443', proxy_log_level: 'error' }, [route(up.url)]);
    const svc = await start();
    await expect.poll(svc.out, { timeout: 5_000 }).toContain('"msg":"listening"');
    for (let i = 0; i < 3; i++) expect(await get(svc.port)).toBe(200);
    cfg.write({ address: '127.0.0.1:8443', proxy_log_level: 'info' }, [route(up.url)]);
    await expect.poll(svc.out, { timeout: 10_000 }).toContain('"msg":"reload","result":"swapped"');
    // One process, one log destination, lines in order: an access line of the three requests would
    // stand before the reload's line.
    expect(svc.out().slice(0, svc.out().indexOf('"msg":"reload"'))).not.toContain('"msg":"request"');
    await get(svc.port);
    await expect.poll(svc.out, { timeout: 5_000 }).toContain('"msg":"request"');
  });

  it('the compiler warnings are shown again on each reload', async () => {
    cfg.write({ address: '127.0.0.1:8443' }, [route(up.url)]);
    const svc = await start();
    const warnings = () => svc.out().match(/"code":"SVC3006","name":"inline-secret","at":"[^"]*","path":"shared_secret"/g)?.length ?? 0;
    expect(warnings()).toBe(1);
    cfg.write({ address: '127.0.0.1:8443', proxy_log_level: 'warn' }, [route(up.url)]);
    await expect.poll(svc.out, { timeout: 10_000 }).toContain('"msg":"reload","result":"swapped"');
    await expect.poll(warnings, { timeout: 5_000 }).toBe(2);
  });

  it('svc_debug: human-readable lines (pino-pretty)', async () => {
    cfg.write({ address: '127.0.0.1:8443', svc_debug: true }, [route(up.url)]);
    const svc = await start();
    await get(svc.port);
    // One line per entry: the message, then status, host, path, route, user, decision as key=value, then the rest; no JSON.
    await expect.poll(svc.out, { timeout: 5_000 }).toMatch(/^\[\d{4}-\d\d-\d\d [\d:.]+ [+-]\d{4}\] INFO: request status=200 host=app\.example\.com path=\/ route=0 decision=allow requestId=[0-9a-f-]+ method=GET ms=\d+ /m);
    expect(svc.out()).toMatch(/^\[[^\]]+\] INFO: listening address=127\.0\.0\.1:\d+ grpcAddress=127\.0\.0\.1:\d+ checksum=sha256:[0-9a-f]{64} routes=1$/m);
    expect(svc.out()).not.toMatch(/[{}]/);
    // Not a terminal: no colors.
    expect(svc.out()).not.toContain('\x1b[');
  });
});
