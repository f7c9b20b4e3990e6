/**
 * What this svc build is (`svc --version`, `svc_build_info`): the version from package.json, the git
 * revision it came from, and the release in the form `MAJOR.MINOR.PATCH+GITHASH` (docs/deploy.md "Installing the package"), e.g.
 * `0.1.0+1a2b3c4d5e6f`.
 *
 * The revision, first found of:
 * 1. the `SVC_GIT_REVISION` environment variable (hex; container builds that copy sources without `.git`);
 * 2. `git rev-parse --short=12 HEAD` when svc runs from a git checkout (package.json's directory holds
 *    `.git`; an installed package inside some other repository never reads that repository's HEAD);
 * 3. the `REVISION` file recorded beside the build (`dist/REVISION`, written by `bin/build` at
 *    `npm ci`, `npm run build` and `npm pack`: how an installed package knows its revision);
 * 4. else `unknown`, and the release reads `0.1.0+unknown` (still valid semver build metadata, and
 *    plainly not a hash).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface BuildInfo {
  /** package.json's version: MAJOR.MINOR.PATCH. */
  readonly version: string;
  /** The git revision (12 hex digits from a checkout), or `unknown`. */
  readonly revision: string;
  /** `version+revision`: the release in its documented form (docs/deploy.md). */
  readonly release: string;
  /** `process.version` without the `v` (the "Go version" label of peers, for a Node program). */
  readonly nodeVersion: string;
}

/** The revision when none can be found. */
const UNKNOWN_REVISION = 'unknown';

let cached: BuildInfo | undefined;

/** The build information of this process (read once). */
export function buildInfo(): BuildInfo {
  if (cached) return cached;
  const root = packageRoot();
  const version = root ? readVersion(join(root, 'package.json')) : 'unknown';
  const revision = readRevision(root);
  cached = Object.freeze({ version, revision, release: releaseOf(version, revision), nodeVersion: process.version.replace(/^v/, '') });
  return cached;
}

/** `MAJOR.MINOR.PATCH+GITHASH` (docs/deploy.md "Installing the package"); `+unknown` when the revision is not known. */
export function releaseOf(version: string, revision: string): string {
  return `${version}+${REVISION.test(revision) ? revision : UNKNOWN_REVISION}`;
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
  if (root && existsSync(join(root, '.git'))) {
    try {
      const out = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: root, encoding: 'utf8', timeout: 2_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
      if (REVISION.test(out)) return out;
    } catch {
      // no git command, or not a repository after all: the recorded revision, if any
    }
  }
  const here = dirname(fileURLToPath(import.meta.url));
  for (const file of [join(here, '../../REVISION'), ...(root ? [join(root, 'dist/REVISION')] : [])]) {
    try {
      const text = readFileSync(file, 'utf8').trim();
      if (REVISION.test(text)) return text;
    } catch {
      // not recorded here
    }
  }
  return UNKNOWN_REVISION;
}
