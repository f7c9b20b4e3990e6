/**
 * The CA's Retry-After on a rate limit: parsed (seconds or HTTP date), noted from a real 429
 * answer that reaches acme-client (a local HTTP server standing in for the CA's directory), and
 * making the wait after a rate limit at least that long.
 */
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import acme from 'acme-client';
import { afterAll, describe, expect, it } from 'vitest';
import { connectAccount } from '../../../../runtime/tls/acme/ca-client.ts';
import { parseRetryAfter, rateLimitWaitMs, retryAfterOf } from '../../../../runtime/tls/acme/retry-after.ts';
import { AutocertStorage } from '../../../../runtime/tls/acme/storage.ts';

describe('Retry-After', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');

  it('reads a delay in seconds or an HTTP date, and nothing else', () => {
    expect(parseRetryAfter('120', now)).toBe(now + 120_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 01:00:00 GMT', now)).toBe(now + 3_600_000);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it('makes a rate-limited wait at least as long as the CA said', () => {
    expect(rateLimitWaitMs(60_000, now + 7_200_000, now)).toBe(7_200_000);
    expect(rateLimitWaitMs(60_000, now + 1_000, now)).toBe(60_000);
    expect(rateLimitWaitMs(60_000, undefined, now)).toBe(60_000);
  });

  const servers: Server[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const s of servers) await new Promise((r) => s.close(r));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("notes the Retry-After of the CA's 429 answer", async () => {
    const server = createServer((_req, res) => res.writeHead(429, { 'retry-after': '3600', 'content-type': 'application/problem+json' }).end('{"type":"urn:ietf:params:acme:error:rateLimited","detail":"too many requests"}'));
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const dir = mkdtempSync(join(tmpdir(), 'svc-retry-after-'));
    dirs.push(dir);
    const storage = new AutocertStorage(dir, `${origin}/dir`);
    storage.ensureDirs();
    // acme-client's own retries of a 429 (waiting Retry-After each time) are turned off here only.
    const settings = (acme.axios.defaults as unknown as { acmeSettings: { retryMaxAttempts: number } }).acmeSettings;
    const attempts = settings.retryMaxAttempts;
    settings.retryMaxAttempts = 0;
    try {
      const autocert = { enabled: true, caUrl: `${origin}/dir`, email: null, mustStaple: false, dir, useStaging: false, eabKeyId: null, eabMacKey: null, trustedCa: null };
      await expect(connectAccount(storage, { directoryUrl: `${origin}/dir`, autocert })).rejects.toThrow();
    } finally {
      settings.retryMaxAttempts = attempts;
    }
    const at = retryAfterOf(origin, Date.now());
    expect(at).toBeDefined();
    expect(at! - Date.now()).toBeGreaterThan(3_000_000);
  });
});
