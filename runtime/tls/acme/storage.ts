/**
 * The autocert directory (`autocert_dir`, docs/autocert.md "Storage directory"): what svc keeps between restarts and shares
 * with other instances using the same directory.
 *
 * Layout, per CA (staging and production never mix):
 *   <dir>/<ca-host>-<hash>/account.key              the ACME account key (PEM)
 *   <dir>/<ca-host>-<hash>/certificates/<name>.pem  private key, then the certificate chain
 *   <dir>/<ca-host>-<hash>/locks/<name>.lock        held while one instance orders <name> (lock.ts)
 *   <dir>/<ca-host>-<hash>/challenges/<name>         the challenge the CA last validated for <name>
 *                                                    (`tls-alpn-01` or `http-01`), tried first next time
 *   <dir>/challenges/tls-alpn-01/<name>.pem          a pending TLS-ALPN-01 answer (key, certificate)
 *   <dir>/challenges/http-01/<token>                 a pending HTTP-01 key authorization
 * Pending challenges live in the directory, not in memory, so whichever instance (or cluster
 * worker) the CA's validation connection reaches can answer it.
 *
 * INVARIANT (private-files): directories are created 0700 and files written 0600, through a
 * temporary file and a rename, so a reader (another instance) never sees half a file.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ChallengeType } from './problems.ts';

/** DNS names as they appear in file names: nothing that could leave the directory. */
const SAFE_NAME = /^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$/;
/** ACME tokens are base64url (RFC 8555 §8.1). */
const SAFE_TOKEN = /^[A-Za-z0-9_-]{1,256}$/;

export class AutocertStorage {
  /** The per-CA directory. */
  readonly caDir: string;

  constructor(
    readonly dir: string,
    directoryUrl: string,
  ) {
    const u = new URL(directoryUrl);
    const hash = createHash('sha256').update(directoryUrl).digest('hex').slice(0, 10);
    this.caDir = join(dir, `${u.hostname.replace(/[^a-z0-9.-]/gi, '_')}-${hash}`);
  }

  get accountKeyPath(): string {
    return join(this.caDir, 'account.key');
  }

  certificatePath(name: string): string {
    return join(this.caDir, 'certificates', `${checkName(name)}.pem`);
  }

  lockPath(name: string): string {
    return join(this.caDir, 'locks', `${checkName(name)}.lock`);
  }

  /** Where the challenge the CA last validated for `name` is kept (order.ts tries it first). */
  challengePreferencePath(name: string): string {
    return join(this.caDir, 'challenges', checkName(name));
  }

  /**
   * The challenge the CA last validated for `name`, or undefined (none kept, unreadable, or not one
   * svc answers): only an order of preference, so a problem reading it is no reason to fail.
   */
  readChallengePreference(name: string): ChallengeType | undefined {
    let text: string | undefined;
    try {
      text = this.read(this.challengePreferencePath(name))?.trim();
    } catch {
      return undefined;
    }
    return text === 'tls-alpn-01' || text === 'http-01' ? text : undefined;
  }

  tlsAlpnPath(name: string): string {
    return join(this.dir, 'challenges', 'tls-alpn-01', `${checkName(name)}.pem`);
  }

  http01Path(token: string): string | undefined {
    return SAFE_TOKEN.test(token) ? join(this.dir, 'challenges', 'http-01', token) : undefined;
  }

  /** Creates the directories (0700). */
  ensureDirs(): void {
    for (const d of [this.dir, this.caDir, join(this.caDir, 'certificates'), join(this.caDir, 'locks'), join(this.caDir, 'challenges'), join(this.dir, 'challenges'), join(this.dir, 'challenges', 'tls-alpn-01'), join(this.dir, 'challenges', 'http-01')]) {
      mkdirSync(d, { recursive: true, mode: 0o700 });
      chmodSync(d, 0o700);
    }
  }

  /** The file's text, or undefined when it does not exist. */
  read(path: string): string | undefined {
    try {
      return readFileSync(path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }

  /** Writes `text` atomically with mode 0600. */
  write(path: string, text: string): void {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    writeFileSync(tmp, text, { mode: 0o600 });
    renameSync(tmp, path);
  }

  remove(path: string): void {
    rmSync(path, { force: true });
  }
}

function checkName(name: string): string {
  if (!SAFE_NAME.test(name) || name.includes('..')) throw new Error(`bug: not a storable DNS name: ${JSON.stringify(name)}`);
  return name;
}
