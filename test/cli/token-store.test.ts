/** The token store of `svc tcp` (cli/token-store.ts): modes, binding to route and proxy, expiry. */
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deleteToken, loadToken, saveToken, tokenDirectory, tokenFile } from '../../cli/token-store.ts';

const ROUTE = 'tcp+https://redis.example.com:6379';
const PROXY = 'https://redis.example.com';
const NOW = 1_700_000_000_000;
const dir = () => join(mkdtempSync(join(tmpdir(), 'svc-tokens-')), 'svc', 'tokens');
const token = (over: Partial<{ route: string; proxy: string; token: string; expiresAtMs: number }> = {}) => ({ route: ROUTE, proxy: PROXY, token: 'svc1.abc', expiresAtMs: NOW + 3_600_000, ...over });

describe('token store', () => {
  it('lives under $XDG_CONFIG_HOME/svc, else ~/.config/svc; a relative XDG_CONFIG_HOME is ignored', () => {
    expect(tokenDirectory({ XDG_CONFIG_HOME: '/x/cfg' })).toBe('/x/cfg/svc/tokens');
    expect(tokenDirectory({ XDG_CONFIG_HOME: 'rel' })).toMatch(/\/\.config\/svc\/tokens$/);
    expect(tokenDirectory({})).toMatch(/\/\.config\/svc\/tokens$/);
  });

  it('writes the directory 0700 and the file 0600, named by a hash, holding route, proxy and expiry', () => {
    const d = dir();
    saveToken(d, token());
    expect(statSync(d).mode & 0o777).toBe(0o700);
    const file = tokenFile(d, ROUTE, PROXY);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(file).not.toContain('redis');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(token());
    expect(loadToken(d, ROUTE, PROXY, NOW)).toEqual(token());
  });

  it('is used only for the same route through the same proxy origin', () => {
    const d = dir();
    saveToken(d, token());
    expect(loadToken(d, ROUTE, 'https://attacker.example', NOW)).toBeUndefined();
    expect(loadToken(d, 'tcp+https://redis.example.com:6380', PROXY, NOW)).toBeUndefined();
    // A record copied under another route's file name is not taken for that route.
    writeFileSync(tokenFile(d, ROUTE, 'https://other.example'), readFileSync(tokenFile(d, ROUTE, PROXY)), { mode: 0o600 });
    expect(loadToken(d, ROUTE, 'https://other.example', NOW)).toBeUndefined();
  });

  it('is not used once expired (or within a minute of it), nor when others may read it', () => {
    const d = dir();
    saveToken(d, token({ expiresAtMs: NOW + 30_000 }));
    expect(loadToken(d, ROUTE, PROXY, NOW)).toBeUndefined();
    saveToken(d, token());
    chmodSync(tokenFile(d, ROUTE, PROXY), 0o644);
    expect(loadToken(d, ROUTE, PROXY, NOW)).toBeUndefined();
    saveToken(d, token()); // rewritten: 0600 again
    expect(loadToken(d, ROUTE, PROXY, NOW)?.token).toBe('svc1.abc');
    deleteToken(d, ROUTE, PROXY);
    expect(loadToken(d, ROUTE, PROXY, NOW)).toBeUndefined();
  });

  it('treats a damaged file as no token', () => {
    const d = dir();
    saveToken(d, token());
    writeFileSync(tokenFile(d, ROUTE, PROXY), '{not json', { mode: 0o600 });
    expect(loadToken(d, ROUTE, PROXY, NOW)).toBeUndefined();
  });
});
