import { describe, expect, it } from 'vitest';
import { parseRedisUrl } from '../../../compiler/ir/redis.ts';

describe('redis connection strings (spec 2.6)', () => {
  it('plain redis with credentials and a database', () => {
    expect(parseRedisUrl('redis://user:p%40ss@cache.internal:6380/3')).toEqual({
      kind: 'redis', tls: false, hosts: [{ host: 'cache.internal', port: 6380 }], username: 'user', password: 'p@ss', db: 3, master: null, params: {},
    });
  });
  it('TLS form and default port', () => {
    expect(parseRedisUrl('rediss://cache')).toMatchObject({ kind: 'redis', tls: true, hosts: [{ host: 'cache', port: 6379 }], db: 0 });
  });
  it('sentinel with several hosts, master and db', () => {
    expect(parseRedisUrl('redis+sentinel://:secret@s1:26379,s2:26379/mymaster/2?dial_timeout=5s')).toEqual({
      kind: 'sentinel', tls: false, hosts: [{ host: 's1', port: 26379 }, { host: 's2', port: 26379 }], username: null, password: 'secret', db: 2, master: 'mymaster', params: { dial_timeout: '5s' },
    });
  });
  it('cluster', () => {
    expect(parseRedisUrl('rediss+cluster://u:p@n1:7000,n2:7001/')).toMatchObject({ kind: 'cluster', tls: true, hosts: [{ host: 'n1', port: 7000 }, { host: 'n2', port: 7001 }] });
  });
  it('duration parameters', () => {
    expect(parseRedisUrl('redis://cache/?dial_timeout=250ms&read_timeout=2s')).toMatchObject({ params: { dial_timeout: '250ms', read_timeout: '2s' } });
  });
  it.each([
    ['http://cache:6379', /unknown scheme/],
    ['constructor://cache:6379', /unknown scheme/],
    ['toString://cache:6379', /unknown scheme/],
    ['redis://', /no host/],
    ['redis://a:1,b:2', /several hosts/],
    ['redis://cache/16', /database/],
    ['redis://cache:99999', /out of range/],
    ['redis+sentinel://s1:26379', /master/],
    ['redis+cluster://n1:7000/2', /no database/],
    ['cache:6379', /expected/],
    ['redis://cache/?pool_size=3', /unknown parameter `pool_size`/],
    ['redis+sentinel://s1/m?dial_timeout=5', /duration/],
    ['redis://cache/?read_timeout=11m', /duration/],
    ['redis://cache/a/b', /too many path segments/],
    ['redis+sentinel://s1/m/1/2', /too many path segments/],
    ['redis://u:%zz@cache', /percent-encoding/],
    ['redis://[::1', /not a host/],
  ])('%s is rejected', (url, problem) => {
    const r = parseRedisUrl(url);
    expect(typeof r).toBe('string');
    expect(r).toMatch(problem);
  });
});
