/**
 * The cost of a session-cache miss on the Redis store (issue 14): one `get` is one Redis round trip
 * plus opening the sealed record. Starts a redis-server on loopback (no persistence), stores a
 * typical session (OIDC tokens, a few claims), then times sequential `get`s on the Redis store and,
 * for comparison, on the memory store. Also reports the bytes Redis uses per session
 * (`MEMORY USAGE` of its key) and the sealed value's size. Run: `npx tsx bench/proxy/redis-miss.ts`
 * (`--n 5000`). Needs redis-server and redis-cli.
 */
import { performance } from 'node:perf_hooks';
import { MemoryStore } from '../../runtime/databroker/memory-store.ts';
import { RedisStore } from '../../runtime/databroker/redis-store.ts';
import { newSessionId, type SessionRecord, type SessionStore } from '../../runtime/core/session-store.ts';
import { cli, startRedis } from '../../test/support/redis-server.ts';
import { storage } from '../../test/runtime/databroker/redis-support.ts';

const n = Number(process.argv[process.argv.indexOf('--n') + 1] || 5000) || 5000;

/** A session as a real sign-in makes it: id/access/refresh tokens of typical sizes, a few claims. */
function typicalSession(): SessionRecord {
  const now = Date.now();
  const jwt = (bytes: number) => `${'x'.repeat(36)}.${'y'.repeat(bytes)}.${'z'.repeat(86)}`;
  return {
    id: newSessionId(),
    userId: 'f3a1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
    email: 'alice@example.com',
    groups: ['admins', 'staff', 'engineering'],
    claims: { sub: 'f3a1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d', email: 'alice@example.com', email_verified: true, name: 'Alice Example', groups: ['admins', 'staff', 'engineering'] },
    idToken: jwt(600),
    accessToken: jwt(500),
    refreshToken: 'r'.repeat(64),
    accessTokenExpiresAtMs: now + 3_600_000,
    expiresAtMs: now + 14 * 3_600_000,
    createdAtMs: now,
  };
}

async function timeGets(store: SessionStore, id: string): Promise<{ medianUs: number; p99Us: number }> {
  for (let i = 0; i < 500; i++) await store.get(id); // warm-up (JIT, connection)
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await store.get(id);
    samples.push((performance.now() - t) * 1000);
  }
  samples.sort((a, b) => a - b);
  return { medianUs: samples[Math.floor(n / 2)]!, p99Us: samples[Math.floor(n * 0.99)]! };
}

const redis = await startRedis();
const r = new RedisStore({ storage: storage(`redis://127.0.0.1:${redis.port}/0`), secret: Buffer.alloc(32, 3) });
const m = new MemoryStore();
try {
  await r.ready();
  const session = typicalSession();
  await r.put(session);
  await m.put(session);
  const onRedis = await timeGets(r, session.id);
  const inMemory = await timeGets(m, session.id);
  const key = cli(redis.port, ['--scan', '--pattern', 'svc:*:s']).trim().split('\n')[0]!;
  const usage = Number(cli(redis.port, ['MEMORY', 'USAGE', key, 'SAMPLES', '0']).trim());
  const valueBytes = Number(cli(redis.port, ['STRLEN', key]).trim());
  const json = Buffer.byteLength(JSON.stringify(session));
  console.log(`cache miss (sequential get, ${n} samples, loopback):`);
  console.log(`  Redis store:  median ${onRedis.medianUs.toFixed(0)} µs, p99 ${onRedis.p99Us.toFixed(0)} µs`);
  console.log(`  memory store: median ${inMemory.medianUs.toFixed(1)} µs, p99 ${inMemory.p99Us.toFixed(1)} µs`);
  console.log(`bytes per session: record JSON ${json} B, sealed value ${valueBytes} B, Redis MEMORY USAGE of the key ${usage} B`);
} finally {
  await r.close();
  await m.close();
  await redis.stop();
}
