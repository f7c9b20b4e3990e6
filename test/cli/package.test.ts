/**
 * The npm package: `npm pack` makes a tarball that installs (into an empty directory, and globally)
 * with svc's runtime dependencies only, and whose `svc` command works from any directory, reporting
 * the commit it was packed from.
 *
 * The pack runs in a scratch copy of the checkout (its sources, package files and a fresh git
 * repository; node_modules linked), never in the checkout itself: `npm pack` rebuilds dist/ through
 * `prepare`, which would pull the build from under anything else running svc from this checkout.
 * Installs come from the local npm cache (`--prefer-offline`), which `npm ci` filled.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, get as httpGet } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { freePort } from '../support/ports.ts';

const ROOT = join(import.meta.dirname, '../..');
const PACKAGE = '@svc-proxy/svc';
/** What the package is built from: every path bin/build and package.json's `files` read. */
const SOURCES = ['bin', 'cli', 'compiler', 'runtime', 'schemas', 'deploy', 'package.json', 'package-lock.json', 'README.md', 'CHANGELOG.md', 'tsconfig.json', 'tsconfig.build.json'];

/** This process's environment without what `npm test` sets for its own package (its prefix above all). */
function npmEnv(): NodeJS.ProcessEnv {
  const keep = new Set(['npm_config_cache', 'npm_config_userconfig', 'npm_config_registry']);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_') || keep.has(k.toLowerCase())));
  delete env['SVC_GIT_REVISION'];
  delete env['SVC_FROM_SOURCE'];
  return env;
}

function run(command: string, args: string[], cwd: string) {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8', env: npmEnv(), timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function npm(args: string[], cwd: string): string {
  const r = run('npm', args, cwd);
  if (r.code !== 0) throw new Error(`npm ${args.join(' ')} exited ${r.code}:\n${r.out}\n${r.err}`);
  return r.out;
}

const cleanups: (() => void)[] = [];
afterAll(() => {
  for (const c of cleanups) c();
});

/** The body of `GET /` on 127.0.0.1:port for a host (fetch would not send our Host header). */
function get(port: number, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    httpGet({ host: '127.0.0.1', port, path: '/', headers: { host } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve(text));
    }).on('error', reject);
  });
}

let dir: string;
let revision: string;
let tarball: string;
let packed: string[];
/** The empty directory the tarball is installed into. */
let app: string;
/** Somewhere else: the command must not depend on the working directory. */
let elsewhere: string;
const version = process.version.slice(1);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-package-'));
  const src = join(dir, 'src');
  for (const p of SOURCES) cpSync(join(ROOT, p), join(src, p), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(src, 'node_modules'), 'dir');
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: src, encoding: 'utf8' }).trim();
  git('init', '-q');
  git('add', '-A');
  git('commit', '-q', '-m', 'pack');
  revision = git('rev-parse', '--short=12', 'HEAD');

  const out = join(dir, 'out');
  mkdirSync(out);
  const [report] = JSON.parse(npm(['pack', '--json', '--pack-destination', out], src)) as { filename: string; files: { path: string }[] }[];
  tarball = join(out, report!.filename);
  packed = report!.files.map((f) => f.path);

  app = join(dir, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'scratch-app', private: true }));
  npm(['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], app);
  elsewhere = join(dir, 'elsewhere');
  mkdirSync(elsewhere);
  writeFileSync(join(elsewhere, 'config.yaml'), stringify({ ...BASE_SETTINGS, routes: [{ from: 'https://app.example.com', to: 'http://127.0.0.1:9000', allow_any_authenticated_user: true }] }));
  writeFileSync(join(elsewhere, 'broken.yaml'), stringify({ ...BASE_SETTINGS, routes: [{ from: 'https://app.example.com/x', to: 'http://127.0.0.1:9000' }] }));
}, 150_000);

describe('npm pack', () => {
  it(`is named ${PACKAGE} (the name svc belongs to an unrelated package on the npm registry)`, () => {
    expect(tarball).toMatch(/svc-proxy-svc-\d+\.\d+\.\d+\.tgz$/);
  });

  it('carries the build, the command, the systemd unit and the changelog, and no sources, tests or build tools', () => {
    for (const f of ['package.json', 'README.md', 'CHANGELOG.md', 'bin/svc', 'dist/cli/main.js', 'dist/schemas/plan.schema.json', 'dist/runtime/upstream/health/health.proto', 'dist/REVISION', 'deploy/systemd/svc.service'])
      expect(packed).toContain(f);
    expect(packed.filter((f) => !/^(dist|bin|deploy)\/|^(package\.json|README\.md|CHANGELOG\.md)$/.test(f))).toEqual([]);
    expect(packed.filter((f) => f.endsWith('.ts'))).toEqual([]);
  });

  it('installs with the runtime dependencies only', () => {
    const modules = join(app, 'node_modules');
    expect(existsSync(join(modules, PACKAGE, 'dist/cli/main.js'))).toBe(true);
    for (const dev of ['typescript', 'tsx', 'vitest', 'oidc-provider', 'fast-check', 'playwright-core']) expect(existsSync(join(modules, dev)), dev).toBe(false);
    for (const dep of ['commander', 'yaml', 'pino']) expect(existsSync(join(modules, dep)), dep).toBe(true);
  });

  it('svc --version, from another directory, reports the commit the package was packed from', () => {
    const r = run(join(app, 'node_modules/.bin/svc'), ['--version'], elsewhere);
    expect(r.err).toBe('');
    expect(r.out).toBe(`svc 0.1.0+${revision} (node ${version})\n`);
    // npx in the project that installed it runs the same command.
    expect(run('npx', ['--no', '--', 'svc', '--version'], app).out).toBe(`svc 0.1.0+${revision} (node ${version})\n`);
  });

  it('svc compile --check compiles a one-route config, and finds the mistake in a broken one', () => {
    const ok = run(join(app, 'node_modules/.bin/svc'), ['compile', '--check', '-config', 'config.yaml'], elsewhere);
    expect(ok.err).toMatch(/ok: sha256:[0-9a-f]{64}/);
    expect(ok.code).toBe(0);
    const bad = run(join(app, 'node_modules/.bin/svc'), ['compile', '--check', '-config', 'broken.yaml'], elsewhere);
    expect(bad.err).toMatch(/broken\.yaml:\d+:\d+: error SVC3501/);
    expect(bad.code).toBe(1);
  });

  it('svc run serves a route from the installed package and stops on SIGTERM with exit code 0', async () => {
    const upstream = createServer((_req, res) => res.end('hello from upstream'));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => upstream.close());
    const port = await freePort();
    const config = { ...BASE_SETTINGS, address: `127.0.0.1:${port}`, routes: [{ from: 'https://app.example.com', to: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, allow_public_unauthenticated_access: true }] };
    writeFileSync(join(elsewhere, 'run.yaml'), stringify(config));
    const child = spawn(join(app, 'node_modules/.bin/svc'), ['run', '--shutdown-delay', '0', '--grpc-listen', '127.0.0.1:0', '-config', 'run.yaml', '--workers', '1'], { cwd: elsewhere, env: npmEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    cleanups.push(() => child.kill('SIGKILL'));
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let body = '';
    for (const deadline = Date.now() + 30_000; Date.now() < deadline && child.exitCode === null; await new Promise((r) => setTimeout(r, 200))) {
      try {
        body = await get(port, 'app.example.com');
        break;
      } catch {
        // not listening yet
      }
    }
    expect(body, output).toBe('hello from upstream');
    child.kill('SIGTERM');
    expect(await exited, output).toBe(0);
  });

  it('installs globally: `npm install -g` gives a working svc command', () => {
    const prefix = join(dir, 'global');
    npm(['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', tarball], dir);
    const r = run(join(prefix, 'bin/svc'), ['compile', '--check', '-config', 'config.yaml'], elsewhere);
    expect(r.code).toBe(0);
  });

  it("'prepare', should npm run it in the installed package, changes nothing", () => {
    const installed = join(app, 'node_modules', PACKAGE);
    const r = run(process.execPath, [join(installed, 'bin/build')], installed);
    expect(r.code).toBe(0);
    expect(run(join(app, 'node_modules/.bin/svc'), ['--version'], elsewhere).out).toBe(`svc 0.1.0+${revision} (node ${version})\n`);
  });

  it('says +unknown when the package recorded no revision', () => {
    rmSync(join(app, 'node_modules', PACKAGE, 'dist/REVISION'));
    expect(run(join(app, 'node_modules/.bin/svc'), ['--version'], elsewhere).out).toBe(`svc 0.1.0+unknown (node ${version})\n`);
  });
});
