/**
 * Where `svc tcp` keeps the tokens programmatic login gave it: one file per route and proxy origin
 * in the user's config directory (`$XDG_CONFIG_HOME/svc/tokens/`, else `~/.config/svc/tokens/`),
 * the directory 0700 and each file 0600, named by a hash of route and proxy so neither appears in a
 * file name. A record names its route, proxy origin and expiry; it is used only for exactly that
 * route through exactly that proxy origin, and only before it expires (docs/security.md S32: a token is
 * never presented to another host than the one it was stored for).
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** What is stored for one route through one proxy. */
export interface StoredToken {
  /** `tcp+https://host:port`, canonical (lower-case host). */
  readonly route: string;
  /** The origin `svc tcp` sends CONNECT to (`https://host[:port]`). */
  readonly proxy: string;
  /** `svc1.…` */
  readonly token: string;
  /** When svc said the token expires (ms since the epoch). */
  readonly expiresAtMs: number;
}

/** A token this close to its expiry is not used: a tunnel opened with it could be refused mid-start. */
const EXPIRY_MARGIN_MS = 60_000;

/** The token directory: `$XDG_CONFIG_HOME/svc/tokens`, else `~/.config/svc/tokens`. */
export function tokenDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env['XDG_CONFIG_HOME'];
  // XDG Base Directory: a relative XDG_CONFIG_HOME is invalid and ignored.
  const base = xdg !== undefined && xdg.startsWith('/') ? xdg : join(homedir(), '.config');
  return join(base, 'svc', 'tokens');
}

/** The file of one route through one proxy origin. */
export function tokenFile(dir: string, route: string, proxy: string): string {
  return join(dir, `${createHash('sha256').update(`svc tcp token\0${route}\0${proxy}`).digest('hex')}.json`);
}

/**
 * The stored token of `route` through `proxy`, when there is one that is usable at `nowMs`: for
 * that route and proxy exactly, not expired, in a file only its owner can read. Anything else is
 * "no token" (a fresh sign-in overwrites it).
 */
export function loadToken(dir: string, route: string, proxy: string, nowMs: number): StoredToken | undefined {
  const file = tokenFile(dir, route, proxy);
  let text: string;
  try {
    // A token file others may read is not trusted to be ours alone.
    if ((statSync(file).mode & 0o077) !== 0) return undefined;
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof data !== 'object' || data === null) return undefined;
  const r = data as Partial<Record<keyof StoredToken, unknown>>;
  if (r.route !== route || r.proxy !== proxy || typeof r.token !== 'string' || typeof r.expiresAtMs !== 'number') return undefined;
  if (r.expiresAtMs - EXPIRY_MARGIN_MS <= nowMs) return undefined;
  return { route, proxy, token: r.token, expiresAtMs: r.expiresAtMs };
}

/** Stores a token (the directory made 0700, the file written 0600 and renamed into place). */
export function saveToken(dir: string, t: StoredToken): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const file = tokenFile(dir, t.route, t.proxy);
  const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(temp, `${JSON.stringify({ route: t.route, proxy: t.proxy, token: t.token, expiresAtMs: t.expiresAtMs })}\n`, { mode: 0o600, flag: 'wx' });
  renameSync(temp, file);
}

/** Forgets the token of `route` through `proxy` (svc refused it). */
export function deleteToken(dir: string, route: string, proxy: string): void {
  rmSync(tokenFile(dir, route, proxy), { force: true });
}
