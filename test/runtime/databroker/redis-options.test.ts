/**
 * From storage settings to ioredis options, for every URL shape: who to connect to, with which
 * credentials and TLS material, and the fail-closed bounds (no offline queue, one retry, command
 * and connect timeouts, reconnection forever with capped back-off).
 */
import { describe, expect, it } from 'vitest';
import { fingerprint } from '../../../compiler/ir/material.ts';
import { reconnectDelayMs, redisTarget, RedisConfigError, secretsOf } from '../../../runtime/databroker/redis-options.ts';
import { storage } from './redis-support.ts';

const BOUNDED = { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 2_000, connectTimeout: 2_000 };

describe('redisTarget', () => {
  it('standalone: host, port, db, user and password (percent-decoded), bounded', () => {
    const t = redisTarget(storage('redis://svc:p%40ss@cache.internal:6380/3'));
    expect(t).toMatchObject({ kind: 'redis', options: { host: 'cache.internal', port: 6380, db: 3, username: 'svc', password: 'p@ss', ...BOUNDED } });
    expect('tls' in t.options).toBe(false);
  });

  it('rediss: TLS with the CA, the client certificate and key, verified unless tls_skip_verify', () => {
    const key = Buffer.from('-----BEGIN PRIVATE KEY-----\nTEST\n-----END PRIVATE KEY-----\n').toString('base64');
    const files = { caFile: { pem: 'CA PEM', sha256: 't' }, certFile: { pem: 'CERT PEM', sha256: 't' }, keyFile: { value: key, fingerprint: fingerprint(key) } };
    const t = redisTarget(storage('rediss://cache.internal', files));
    expect(t.options).toMatchObject({ tls: { ca: 'CA PEM', cert: 'CERT PEM', key: expect.stringContaining('TEST'), servername: 'cache.internal', rejectUnauthorized: true } });
    expect(redisTarget(storage('rediss://10.0.0.1', { tlsSkipVerify: true })).options).toMatchObject({ tls: { rejectUnauthorized: false } });
    expect((redisTarget(storage('rediss://10.0.0.1')).options as { tls: object }).tls).not.toHaveProperty('servername');
  });

  it('sentinel: the master name, every sentinel, the db, credentials for sentinels and master, TLS for both', () => {
    const t = redisTarget(storage('rediss+sentinel://:pw@s1:26379,s2:26380/mymaster/2?dial_timeout=500ms&read_timeout=1s'));
    expect(t).toMatchObject({
      kind: 'sentinel',
      options: { name: 'mymaster', db: 2, sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26380 }], password: 'pw', sentinelPassword: 'pw', enableTLSForSentinelMode: true, tls: { rejectUnauthorized: true }, sentinelTLS: { rejectUnauthorized: true }, connectTimeout: 500, commandTimeout: 1_000, enableOfflineQueue: false },
    });
  });

  it('cluster: every seed node, credentials and TLS on each node connection, no offline queue', () => {
    const t = redisTarget(storage('rediss+cluster://u:pw@n1:7000,n2:7001/'));
    expect(t).toMatchObject({ kind: 'cluster', nodes: [{ host: 'n1', port: 7000 }, { host: 'n2', port: 7001 }], options: { enableOfflineQueue: false, redisOptions: { username: 'u', password: 'pw', tls: { rejectUnauthorized: true }, ...BOUNDED } } });
  });

  it('a hand-edited plan with a bad URL fails without showing it', () => {
    const e = (() => {
      try {
        redisTarget(storage('redis://:secret-pw@a:1,b:2'));
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    expect(e).toBeInstanceOf(RedisConfigError);
    expect((e as Error).message).not.toContain('secret-pw');
  });

  it('reconnects forever with a capped back-off; knows which texts to redact', () => {
    expect(reconnectDelayMs(1)).toBe(100);
    expect(reconnectDelayMs(1_000)).toBe(2_000);
    expect(secretsOf(storage('redis://:p%40ss@cache/0'))).toEqual(['redis://:p%40ss@cache/0', 'p@ss', 'p%40ss']);
  });
});
