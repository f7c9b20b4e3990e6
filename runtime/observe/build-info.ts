/**
 * What this svc build is: the version from package.json and the git revision it was built from
 * (`svc --version`, `svc_build_info`). Production runs without git, so the revision is written at
 * build time: `bin/build` writes `REVISION` into dist/. Resolution order: the `SVC_GIT_REVISION`
 * environment variable (container builds that copy sources without `.git`), the `REVISION` file
 * beside the build, `git rev-parse` when running from a checkout's sources, else `unknown`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface BuildInfo {
  readonly version: string;
  readonly revision: string;
  /** `process.version` without the `v` (the spec's "Go version" label, for a Node program). */
  readonly nodeVersion: string;
}

let cached: BuildInfo | undefined;

/** The build information of this process (read once). */
export function buildInfo(): BuildInfo {
  if (cached) return cached;
  const root = packageRoot();
  const version = root ? readVersion(join(root, 'package.json')) : 'unknown';
  cached = Object.freeze({ version, revision: readRevision(root), nodeVersion: process.version.replace(/^v/, '') });
  return cached;
}

/**
 * The directory holding package.json: two levels up from this file in the sources
 * (runtime/observe/), three from the build (dist/runtime/observe/).
 */
function packageRoot(): string | undefined {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const up of ['../..', '../../..']) {
    const dir = join(here, up);
    if (existsSync(join(dir, 'package.json'))) return dir;
  }
  return undefined;
}

function readVersion(path: string): string {
  try {
    const v = (JSON.parse(readFileSync(path, 'utf8')) as { version?: unknown }).version;
    return typeof v === 'string' && v !== '' ? v : 'unknown';
  } catch {
    return 'unknown';
  }
}

const REVISION = /^[0-9a-f]{7,40}$/;

function readRevision(root: string | undefined): string {
  const env = process.env['SVC_GIT_REVISION']?.trim();
  if (env && REVISION.test(env)) return env;
  const here = dirname(fileURLToPath(import.meta.url));
  for (const file of [join(here, '../../REVISION'), ...(root ? [join(root, 'dist/REVISION')] : [])]) {
    try {
      const text = readFileSync(file, 'utf8').trim();
      if (REVISION.test(text)) return text;
    } catch {
      // not a build: try the checkout
    }
  }
  if (!root || !existsSync(join(root, '.git'))) return 'unknown';
  try {
    const out = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: root, encoding: 'utf8', timeout: 2_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return REVISION.test(out) ? out : 'unknown';
  } catch {
    return 'unknown';
  }
}
