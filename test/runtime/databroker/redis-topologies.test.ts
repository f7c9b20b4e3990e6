/**
 * Every URL shape really connects (docs/scale-out.md): `rediss://` with a CA and a client certificate,
 * `redis+sentinel://` with a failover in the middle of the test, `redis+cluster://` across three
 * nodes (keys spread over every node: MOVED followed; a slot migrated under a live session: ASK
 * followed), each against real servers on loopback. Commands issued before the client is ready
 * count as waits (docs/observability.md "Metric reference" `redis_wait_count_total`) on every topology.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveKey } from '../../../runtime/core/keys.ts';
import { KeyLayout } from '../../../runtime/databroker/redis-keys.ts';
import { RedisStore } from '../../../runtime/databroker/redis-store.ts';
import { makeCa, issue } from '../tls/pki.ts';
import { fingerprint } from '../../../compiler/ir/material.ts';
import { cli, startCluster, startRedis, startSentinelSet, type RedisCluster, type RedisProcess, type SentinelSet } from '../../support/redis-server.ts';
import { describeWithCommands } from '../../support/system.ts';
import { sessionRecord } from './records.ts';
import { eventually } from './store-contract.ts';
import { storage, STORE_SECRET } from './redis-support.ts';

describeWithCommands(['redis-server', 'redis-cli'], 'RedisStore over TLS (rediss://, CA and client certificate)', () => {
  let redis: RedisProcess;
  let pem: { ca: string; clientCert: string; clientKey: string };
  beforeAll(async () => {
    const ca = await makeCa('redis test CA');
    const server = await issue(ca, { cn: 'localhost', dns: ['localhost'] });
    const client = await issue(ca, { cn: 'svc', usage: 'client' });
    pem = { ca: ca.certPem, clientCert: client.certPem, clientKey: client.keyPem };
    redis = await startRedis({ tls: { certPem: server.certPem, keyPem: server.keyPem, caPem: ca.certPem, requireClientCert: true } });
  }, 30_000);
  afterAll(async () => redis?.stop());

  it('connects with the CA and the client certificate, and is refused without them', async () => {
    const key = Buffer.from(pem.clientKey).toString('base64');
    const tls = { caFile: { pem: pem.ca, sha256: 'test' }, certFile: { pem: pem.clientCert, sha256: 'test' }, keyFile: { value: key, fingerprint: fingerprint(key) } };
    const s = new RedisStore({ storage: storage(`rediss://localhost:${redis.port}`, tls), secret: STORE_SECRET });
    try {
      await s.ready(15_000);
      const r = sessionRecord(Date.now());
      await s.put(r);
      expect(await s.get(r.id)).toEqual(r);
    } finally {
      await s.close();
    }
    // Without the client certificate the server refuses the handshake: unavailable, never a hang.
    // Without the CA the server's certificate is not trusted; tls_skip_verify accepts it.
    // (Three clients side by side: each refusal is a wait of its own.)
    const noCert = new RedisStore({ storage: storage(`rediss://localhost:${redis.port}`, { caFile: tls.caFile }), secret: STORE_SECRET });
    const skip = new RedisStore({ storage: storage(`rediss://localhost:${redis.port}`, { certFile: tls.certFile, keyFile: tls.keyFile, tlsSkipVerify: true }), secret: STORE_SECRET });
    const strict = new RedisStore({ storage: storage(`rediss://localhost:${redis.port}`, { certFile: tls.certFile, keyFile: tls.keyFile }), secret: STORE_SECRET });
    try {
      await Promise.all([
        (async () => {
          await expect(noCert.ready(1_500)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
          await expect(noCert.get('x')).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
        })(),
        (async () => {
          await skip.ready(15_000);
          expect(await skip.get('x')).toBeUndefined();
        })(),
        expect(strict.ready(1_500)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' }),
      ]);
    } finally {
      await noCert.close();
      await skip.close();
      await strict.close();
    }
  }, 60_000);
});

describeWithCommands(['redis-server', 'redis-sentinel', 'redis-cli'], 'RedisStore through sentinel (redis+sentinel://)', () => {
  let set: SentinelSet;
  beforeAll(async () => {
    set = await startSentinelSet();
  }, 60_000);
  afterAll(async () => set?.stop());

  it('follows a failover: sessions written before it are read after it, and writes work again', async () => {
    const s = new RedisStore({ storage: storage(`redis+sentinel://127.0.0.1:${set.sentinelPort}/${set.masterName}/3`), secret: STORE_SECRET });
    try {
      // Before the master is found: the subscription and a command wait (the command fails at once).
      await expect(s.get('x')).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
      expect(s.poolFigures().waitCount).toBe(2);
      await s.ready(15_000);
      const before = sessionRecord(Date.now());
      await s.put(before);
      // The replica holds it before the failover (replication is asynchronous).
      await eventually(() => cli(set.replica.port, ['-n', '3', 'DBSIZE']).trim() === '1', 10_000);
      const newMaster = await set.failover();
      expect(newMaster).toBe(set.replica.port);
      // Commands may fail (fast) while the client finds the new master; then everything works.
      await eventually(async () => (await s.get(before.id).catch(() => undefined)) !== undefined, 30_000);
      expect(await s.get(before.id)).toEqual(before);
      const after = sessionRecord(Date.now());
      await eventually(async () => s.put(after).then(() => true, () => false), 30_000);
      expect(await s.get(after.id)).toEqual(after);
    } finally {
      await s.close();
    }
  }, 90_000);
});

describeWithCommands(['redis-server', 'redis-cli'], 'RedisStore on a cluster (redis+cluster://)', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startCluster();
  }, 60_000);
  afterAll(async () => cluster?.stop());

  it('spreads sessions over the nodes, follows redirections from any seed, lists every session, and races hand-offs once', async () => {
    // Seeded with one node only: every other slot is reached through MOVED and the slot map.
    const a = new RedisStore({ storage: storage(`redis+cluster://127.0.0.1:${cluster.ports[1]}/`), secret: STORE_SECRET });
    const b = new RedisStore({ storage: storage(`redis+cluster://127.0.0.1:${cluster.ports[2]},127.0.0.1:${cluster.ports[0]}/`), secret: STORE_SECRET });
    try {
      await a.ready(15_000);
      await b.ready(15_000);
      const records = Array.from({ length: 30 }, () => sessionRecord(Date.now()));
      for (const r of records) await a.put(r);
      for (const r of records) expect(await b.get(r.id)).toEqual(r);
      const seen: string[] = [];
      b.onChange((id) => seen.push(id));
      await a.delete(records[0]!.id);
      await eventually(() => seen.includes(records[0]!.id), 5_000);
      await expect(b.put(records[0]!)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_REVOKED' });
      const ids: string[] = [];
      for await (const id of b.sessionIds()) ids.push(id);
      expect(ids.sort()).toEqual(records.slice(1).map((r) => r.id).sort());
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).consumeOnce('handoff:cluster', Date.now() + 60_000)));
      expect(answers.filter((x) => x)).toHaveLength(1);
      expect(await a.acquireLease('refresh', 'a', 60_000)).toBe(true);
      expect(await b.acquireLease('refresh', 'b', 60_000)).toBe(false);
    } finally {
      await a.close();
      await b.close();
    }
  }, 60_000);

  it('follows a slot migration: ASK while the slot moves (read, write, delete), MOVED once it has moved; redirections are not waits', async () => {
    const s = new RedisStore({ storage: storage(`redis+cluster://127.0.0.1:${cluster.ports[0]}/`), secret: STORE_SECRET });
    const layout = new KeyLayout(deriveKey(STORE_SECRET, 'session store names'));
    const ids = cluster.ports.map((p) => cli(p, ['CLUSTER', 'MYID']).trim());
    const finishes: (() => void)[] = [];
    /** Starts moving the slot of `key` from its node to the next one and moves the key: its old node now answers ASK. */
    const startMigration = (key: string) => {
      const slot = cli(cluster.ports[0]!, ['CLUSTER', 'KEYSLOT', key]).trim();
      const from = cluster.ports.findIndex((p) => cli(p, ['CLUSTER', 'COUNTKEYSINSLOT', slot]).trim() !== '0');
      expect(from).toBeGreaterThanOrEqual(0);
      const to = (from + 1) % cluster.ports.length;
      const [src, dst] = [cluster.ports[from]!, cluster.ports[to]!];
      expect(cli(dst, ['CLUSTER', 'SETSLOT', slot, 'IMPORTING', ids[from]!]).trim()).toBe('OK');
      expect(cli(src, ['CLUSTER', 'SETSLOT', slot, 'MIGRATING', ids[to]!]).trim()).toBe('OK');
      expect(cli(src, ['MIGRATE', '127.0.0.1', String(dst), key, '0', '5000']).trim()).toBe('OK');
      expect(cli(src, ['GET', key])).toMatch(/ASK/);
      finishes.push(() => {
        // The destination first, as redis-cli --cluster reshard does.
        for (const p of [dst, ...cluster.ports.filter((x) => x !== dst)]) expect(cli(p, ['CLUSTER', 'SETSLOT', slot, 'NODE', ids[to]!]).trim()).toBe('OK');
        expect(cli(src, ['GET', key])).toMatch(/MOVED/);
      });
    };
    try {
      // Before the cluster is ready: the subscription and a command wait.
      await expect(s.get('x')).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
      expect(s.poolFigures().waitCount).toBe(2);
      await s.ready(15_000);
      const waits = s.poolFigures().waitCount;

      const kept = sessionRecord(Date.now());
      const ended = sessionRecord(Date.now());
      await s.put(kept);
      await s.put(ended);
      startMigration(layout.session(kept.id));
      startMigration(layout.session(ended.id));

      // ASK: every operation reaches the key on its new node (GET and the Lua scripts alike).
      expect(await s.get(kept.id)).toEqual(kept);
      expect(await s.isRevoked(kept.id)).toBe(false);
      const refreshed = { ...kept, groups: ['admins'], idToken: 'refreshed.id.token' };
      await s.put(refreshed);
      expect(await s.get(kept.id)).toEqual(refreshed);
      await s.delete(ended.id);
      expect(await s.get(ended.id)).toBeUndefined();
      expect(await s.isRevoked(ended.id)).toBe(true);
      await expect(s.put(ended)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_REVOKED' });
      const listed: string[] = [];
      for await (const id of s.sessionIds()) listed.push(id);
      expect(listed).toContain(kept.id);
      expect(listed).not.toContain(ended.id);

      // MOVED: the migration is finished; the client's slot map is stale until the redirection.
      for (const finish of finishes) finish();
      expect(await s.get(kept.id)).toEqual(refreshed);
      expect(await s.isRevoked(ended.id)).toBe(true);
      const again = { ...refreshed, idToken: 'after.the.move' };
      await s.put(again);
      expect(await s.get(kept.id)).toEqual(again);
      expect(s.poolFigures().waitCount).toBe(waits);
    } finally {
      await s.close();
    }
  }, 60_000);
});
