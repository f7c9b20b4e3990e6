/**
 * The container image (docs/deploy.md, "Container image"): deploy/image/build's OCI layout holds a
 * root file system in which svc runs as its unprivileged user, and a config saying so (user,
 * volume, entrypoint, labels, health check); deploy/image/Containerfile says the same.
 *
 * One image per run: SVC_IMAGE_DIR names a layout deploy/image/build made already (.ci/run builds it
 * before the tests); without it this file builds one, which takes minutes. The image's root file
 * system is unpacked from the layout's own layer blobs (their digests checked), and its entrypoint,
 * command and health check run in it with chroot as the image's user: chroot keeps the network
 * namespace, so svc inside reaches an upstream on the host's loopback and the test reaches svc.
 * That needs root, and the build needs the Debian packages mmdebstrap and umoci.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { startUpstream, type Upstream } from '../e2e/support.ts';
import { issue, makeCa } from '../runtime/tls/pki.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { which } from '../support/system.ts';
import { WORKER_SEMI_SPACE_MIB } from '../../runtime/process/young-generation.ts';

const ROOT = join(import.meta.dirname, '../..');
const CONTAINERFILE = readFileSync(join(ROOT, 'deploy/image/Containerfile'), 'utf8');
const NODE_VERSION = '24.21.0';
const CHROOT = which('chroot') ?? 'chroot';
const skopeo = which('skopeo');

/** What both images must say (docs/deploy.md, "Container image"). */
const IMAGE = {
  user: '65532:65532',
  volume: '/data/autocert',
  entrypoint: ['/usr/local/bin/svc', 'run'],
  cmd: ['-config', '/etc/svc/config.yaml'],
  healthcheck: ['CMD', '/usr/local/bin/node', '/usr/local/lib/svc/healthcheck.mjs'],
  // NODE_OPTIONS: a single svc process gets the young generation svc gives its cluster workers.
  env: ['SVC_DEFAULT_AUTOCERT_DIR=/data/autocert', 'SVC_HEALTHCHECK_URL=https://127.0.0.1:443/.svc/ping', `NODE_OPTIONS=--max-semi-space-size=${WORKER_SEMI_SPACE_MIB}`],
  ports: ['443/tcp', '80/tcp'],
};
const LABELS = ['version', 'revision', 'created', 'title', 'licenses'].map((k) => `org.opencontainers.image.${k}`);

/** The final stage of the Containerfile: each instruction with its argument, continuations joined. */
function finalStage(): { op: string; arg: string }[] {
  const lines = CONTAINERFILE.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
  const last = lines.map((l) => /^FROM\b/i.test(l)).lastIndexOf(true);
  return lines.slice(last).map((l) => {
    const [, op, arg] = /^(\S+)\s*(.*)$/.exec(l)!;
    return { op: op!.toUpperCase(), arg: arg! };
  });
}
const instructions = (op: string) => finalStage().filter((i) => i.op === op).map((i) => i.arg);

describe('deploy/image/Containerfile', () => {
  it('runs svc as the image deploy/image/build makes: user, volume, entrypoint, command, health check, ports', () => {
    expect(instructions('USER')).toEqual([IMAGE.user]);
    expect(instructions('VOLUME').map((v) => JSON.parse(v) as unknown)).toEqual([[IMAGE.volume]]);
    expect(instructions('ENTRYPOINT').map((v) => JSON.parse(v) as unknown)).toEqual([IMAGE.entrypoint]);
    expect(instructions('CMD').map((v) => JSON.parse(v) as unknown)).toEqual([IMAGE.cmd]);
    const [health, ...more] = instructions('HEALTHCHECK');
    expect(more).toEqual([]);
    const [, cmd] = /\bCMD\s+(\[.*\])$/.exec(health ?? '') ?? [];
    expect(['CMD', ...(JSON.parse(cmd ?? '[]') as string[])]).toEqual(IMAGE.healthcheck);
    const env = instructions('ENV').flatMap((e) => e.split(/\s+/));
    for (const e of IMAGE.env) expect(env).toContain(e);
    expect(instructions('EXPOSE').flatMap((e) => e.split(/\s+/)).sort()).toEqual([...IMAGE.ports].sort());
    for (const l of LABELS.filter((k) => !k.endsWith('.created'))) expect(instructions('LABEL').join(' ')).toContain(`${l}=`);
  });

  it('installs the same files as deploy/image/build: the command, the health check, the user', () => {
    const copies = instructions('COPY').join('\n');
    for (const f of ['deploy/image/svc', 'deploy/image/healthcheck.mjs', 'deploy/image/passwd', 'deploy/image/group']) expect(copies).toContain(f);
  });
});

interface Descriptor {
  readonly digest: string;
  readonly mediaType: string;
  readonly annotations?: Record<string, string>;
}
interface ImageConfig {
  readonly created: string;
  readonly config: {
    readonly User: string;
    readonly Env: string[];
    readonly Entrypoint: string[];
    readonly Cmd: string[];
    readonly Volumes: Record<string, object>;
    readonly ExposedPorts: Record<string, object>;
    readonly Labels: Record<string, string>;
    readonly Healthcheck: { readonly Test: string[]; readonly Interval: number; readonly Timeout: number; readonly Retries: number };
  };
}

const imageDir = process.env['SVC_IMAGE_DIR'];
const requireAll = process.env['SVC_TEST_REQUIRE_ALL'] === '1';
const commands = imageDir ? ['chroot', 'tar'] : ['mmdebstrap', 'umoci', 'chroot', 'tar'];
const missing = commands.filter((c) => which(c) === undefined);
const notRoot = process.getuid?.() !== 0;
const reason = notRoot
  ? 'needs root (chroot, and the build: mmdebstrap and file ownership)'
  : missing.length > 0
    ? `needs ${missing.join(', ')} (apt-get install -y ${missing.filter((c) => c !== 'chroot' && c !== 'tar').join(' ')})`
    : undefined;
if (reason !== undefined && !requireAll) console.warn(`skipping "the svc image": ${reason}`);

(reason === undefined || requireAll ? describe : describe.skip)('the svc image (deploy/image/build)', () => {
  let work: string;
  let layout: string;
  let rootfs: string;
  let config: ImageConfig;
  let tag: string;
  const cleanups: (() => unknown)[] = [];

  beforeAll(() => {
    if (reason !== undefined) throw new Error(`SVC_TEST_REQUIRE_ALL=1 but this suite ${reason}`);
    work = mkdtempSync(join(tmpdir(), 'svc-image-'));
    cleanups.push(() => rmSync(work, { recursive: true, force: true }));
    if (imageDir) layout = imageDir;
    else {
      layout = join(work, 'oci');
      const started = Date.now();
      // Not `npm test`'s own npm environment (its prefix above all): the build runs npm for itself.
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_') || k.toLowerCase() === 'npm_config_cache'));
      const r = spawnSync(join(ROOT, 'deploy/image/build'), ['--out', layout], { cwd: ROOT, env, encoding: 'utf8', timeout: 900_000 });
      if (r.status !== 0) throw new Error(`deploy/image/build exited ${r.status}:\n${r.stderr}`);
      console.log(`deploy/image/build took ${((Date.now() - started) / 1000).toFixed(0)} s (set SVC_IMAGE_DIR to a built layout to skip it)`);
    }
    // The layout, read as a runtime reads it: index, manifest, config and layers by digest.
    const blob = (d: Descriptor): Buffer => {
      const data = readFileSync(join(layout, 'blobs', ...d.digest.split(':')));
      expect(`sha256:${createHash('sha256').update(data).digest('hex')}`, d.digest).toBe(d.digest);
      return data;
    };
    const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
    expect(index.manifests).toHaveLength(1);
    tag = index.manifests[0]!.annotations?.['org.opencontainers.image.ref.name'] ?? '';
    const manifest = JSON.parse(blob(index.manifests[0]!).toString()) as { config: Descriptor; layers: Descriptor[] };
    config = JSON.parse(blob(manifest.config).toString()) as ImageConfig;
    rootfs = join(work, 'rootfs');
    mkdirSync(rootfs);
    for (const layer of manifest.layers) {
      expect(layer.mediaType).toBe('application/vnd.oci.image.layer.v1.tar+gzip');
      blob(layer);
      execFileSync('tar', ['-xzf', join(layout, 'blobs', ...layer.digest.split(':')), '-C', rootfs, '--numeric-owner', '--same-permissions']);
    }
  }, 900_000);

  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('is a layout umoci reads, tagged with the release, and named for docker load', () => {
    const release = config.config.Labels['org.opencontainers.image.version'] ?? '';
    expect(tag).toBe(release.split('+')[0]);
    if (which('umoci')) expect(spawnSync('umoci', ['stat', '--image', `${layout}:${tag}`], { encoding: 'utf8' }).status).toBe(0);
    const docker = JSON.parse(readFileSync(join(layout, 'manifest.json'), 'utf8')) as { RepoTags: string[] }[];
    expect(docker.map((m) => m.RepoTags)).toEqual([[`svc:${tag}`]]);
  });

  if (!skopeo && !requireAll) console.warn('skipping the skopeo check of the image: skopeo is not on the PATH (apt-get install -y skopeo)');
  it.skipIf(!skopeo && !requireAll)('skopeo reads it as an OCI layout and its tar as a docker archive, and Docker format keeps the health check (needs the Debian package skopeo)', () => {
    if (!skopeo) throw new Error('SVC_TEST_REQUIRE_ALL=1 but skopeo is missing (apt-get install -y skopeo)');
    const raw = (ref: string) => {
      const r = spawnSync('skopeo', ['inspect', '--raw', '--config', ref], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as ImageConfig;
    };
    expect(raw(`oci:${layout}:${tag}`)).toEqual(config);
    // What `deploy/image/build --archive` writes: docker load's manifest.json beside the layout.
    const archive = join(work, 'svc-image.tar');
    execFileSync('tar', ['-C', layout, '-cf', archive, '.']);
    expect(raw(`docker-archive:${archive}`)).toEqual(config);
    expect(raw(`oci-archive:${archive}:${tag}`)).toEqual(config);
    // Podman keeps a health check only in Docker's image format, which skopeo converts to.
    const v2s2 = join(work, 'v2s2');
    const copy = spawnSync('skopeo', ['copy', '-q', '--format', 'v2s2', `oci:${layout}:${tag}`, `dir:${v2s2}`], { encoding: 'utf8' });
    expect(copy.status, copy.stderr).toBe(0);
    expect(raw(`dir:${v2s2}`).config.Healthcheck.Test).toEqual(IMAGE.healthcheck);
  }, 120_000);

  it('runs `svc run -config /etc/svc/config.yaml` as the non-root user 65532, with the autocert volume', () => {
    const c = config.config;
    expect(c.User).toBe(IMAGE.user);
    expect(c.Entrypoint).toEqual(IMAGE.entrypoint);
    expect(c.Cmd).toEqual(IMAGE.cmd);
    expect(Object.keys(c.Volumes)).toEqual([IMAGE.volume]);
    expect(Object.keys(c.ExposedPorts).sort()).toEqual([...IMAGE.ports].sort());
    for (const e of IMAGE.env) expect(c.Env).toContain(e);
    expect(readFileSync(join(rootfs, 'etc/passwd'), 'utf8')).toMatch(/^svc:x:65532:65532:/m);
    const data = statSync(join(rootfs, IMAGE.volume));
    expect([data.uid, data.gid, data.mode & 0o7777]).toEqual([65532, 65532, 0o700]);
  });

  it('carries the labels: the version in the spec form, the revision it names, the build time', () => {
    const labels = config.config.Labels;
    for (const l of LABELS) expect(labels[l], l).toBeTruthy();
    const version = labels['org.opencontainers.image.version']!;
    expect(version).toMatch(/^\d+\.\d+\.\d+\+[0-9a-f]{12}$/);
    expect(labels['org.opencontainers.image.revision']).toMatch(/^[0-9a-f]{40}$/);
    expect(labels['org.opencontainers.image.revision']!.startsWith(version.split('+')[1]!)).toBe(true);
    expect(labels['org.opencontainers.image.created']).toBe(config.created);
  });

  it('declares the health check on /.svc/ping', () => {
    const h = config.config.Healthcheck;
    expect(h.Test).toEqual(IMAGE.healthcheck);
    expect(h.Retries).toBeGreaterThan(0);
    expect(h.Timeout).toBeGreaterThanOrEqual(5e9); // the probe gives up after 4 s
  });

  it('holds no shell and no package manager', () => {
    for (const f of ['bin/sh', 'usr/bin/sh', 'bin/bash', 'usr/bin/apt', 'usr/bin/dpkg', 'usr/bin/env']) expect(existsSync(join(rootfs, f)), f).toBe(false);
    expect(existsSync(join(rootfs, 'etc/ssl/certs/ca-certificates.crt'))).toBe(true);
  });

  /** Runs a command in the image's root file system as its user, with its environment. */
  function inImage(args: readonly string[], env: Record<string, string> = {}) {
    const imageEnv = Object.fromEntries(config.config.Env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
    return spawn(CHROOT, ['--userspec', config.config.User, rootfs, ...args], { env: { ...imageEnv, HOME: '/data', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  }
  async function finished(child: ReturnType<typeof inImage>): Promise<{ code: number | null; out: string }> {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    return { code, out };
  }
  const healthcheck = (url: string, host?: string) => finished(inImage(config.config.Healthcheck.Test.slice(1), { SVC_HEALTHCHECK_URL: url, ...(host ? { SVC_HEALTHCHECK_HOST: host } : {}) }));

  it('svc --version reports the release the label names, on Node 24', async () => {
    const r = await finished(inImage([config.config.Entrypoint[0]!, '--version']));
    expect(r.out).toBe(`svc ${config.config.Labels['org.opencontainers.image.version']} (node ${NODE_VERSION})\n`);
    expect(r.code).toBe(0);
  });

  /**
   * The image's entrypoint and command, with the config at /etc/svc/config.yaml: listening on a
   * free loopback port (and its gRPC data broker too), no shutdown delay. Resolves with the port.
   */
  async function runSvc(settings: Record<string, unknown>, upstream: Upstream) {
    writeFileSync(join(rootfs, 'etc/svc/config.yaml'), stringify({ ...settings, routes: [{ from: 'https://app.example.com', to: upstream.url, allow_public_unauthenticated_access: true }] }));
    const flags = ['--listen', '127.0.0.1:0', '--grpc-listen', '127.0.0.1:0', '--shutdown-delay', '0', '--workers', '1'];
    const child = inImage([...config.config.Entrypoint, ...flags, ...config.config.Cmd]);
    cleanups.push(() => child.kill('SIGKILL'));
    const done = finished(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout!.on('data', () => {
        const m = /"msg":"listening","address":"127\.0\.0\.1:(\d+)"/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      void done.then((r) => reject(new Error(`svc exited with ${r.code}: ${r.out}`)));
    });
    return { child, port, done };
  }

  it('svc run proxies a route, answers /.svc/ping and the health check, and exits 0 on SIGTERM', async () => {
    const upstream = await startUpstream((_req, res) => res.end('hello from upstream'));
    cleanups.push(() => upstream.close());
    const svc = await runSvc(BASE_SETTINGS, upstream);
    const get = (path: string, host: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        httpGet({ host: '127.0.0.1', port: svc.port, path, headers: { host } }, (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        }).on('error', reject);
      });
    expect(await get('/', 'app.example.com')).toEqual({ status: 200, body: 'hello from upstream' });
    expect(await get('/.svc/ping', 'app.example.com')).toEqual({ status: 200, body: 'OK' });
    const healthy = await healthcheck(`http://127.0.0.1:${svc.port}/.svc/ping`);
    expect(healthy).toEqual({ code: 0, out: '' });
    // The probe can fail: a path svc does not answer 200.
    expect((await healthcheck(`http://127.0.0.1:${svc.port}/.svc/nothing`)).code).toBe(1);
    svc.child.kill('SIGTERM');
    const r = await svc.done;
    expect(r.code, r.out).toBe(0);
    expect((await healthcheck(`http://127.0.0.1:${svc.port}/.svc/ping`)).code).toBe(1);
  }, 180_000);

  it('the health check reaches svc over HTTPS with a host its certificate covers', async () => {
    const upstream = await startUpstream((_req, res) => res.end('hello'));
    cleanups.push(() => upstream.close());
    const ca = await makeCa('image test CA');
    const server = await issue(ca, { cn: 'example.com', dns: ['*.example.com'] });
    writeFileSync(join(rootfs, 'etc/svc/server.pem'), server.certPem);
    writeFileSync(join(rootfs, 'etc/svc/server.key'), server.keyPem, { mode: 0o644 });
    const { insecure_server: _plain, ...tls } = BASE_SETTINGS;
    const svc = await runSvc({ ...tls, certificate_file: '/etc/svc/server.pem', certificate_key_file: '/etc/svc/server.key' }, upstream);
    const url = `https://127.0.0.1:${svc.port}/.svc/ping`;
    expect(await healthcheck(url)).toEqual({ code: 0, out: '' });
    // A host the certificate does not cover is answered 421, and the probe says so.
    const misdirected = await healthcheck(url, 'svc.example.org');
    expect(misdirected.out).toMatch(/421 Misdirected Request/);
    expect(misdirected.code).toBe(1);
    svc.child.kill('SIGTERM');
    expect((await svc.done).code).toBe(0);
  }, 180_000);
});
