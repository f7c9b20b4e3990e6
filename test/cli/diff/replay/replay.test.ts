/** cli/diff/replay/replay.ts: recorded requests decided again under two plans, counted and grouped, never guessed. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { accessLine, type AccessEntry } from '../../../../runtime/observe/log/access-line.ts';
import { replayLogs, ReplayReadError, SESSION_STORE_UNAVAILABLE } from '../../../../cli/diff/replay/replay.ts';
import { SESSION_STORE_UNAVAILABLE as RUNTIME_SESSION_STORE_UNAVAILABLE } from '../../../../runtime/authn/admit.ts';
import { renderReplayText } from '../../../../cli/diff/replay/render-text.ts';
import { planOf, route } from '../helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-replay-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const T = Date.UTC(2026, 0, 5, 12, 0, 0);
let n = 0;
/** An access line as svc writes it (insecure_server: the Host is as sent). */
function line(e: Partial<AccessEntry> & Pick<AccessEntry, 'host' | 'path' | 'decision'>): string {
  return accessLine({ msg: 'request', requestId: `r${n++}`, method: 'GET', status: 200, ms: 1, plan: 1, client: '192.0.2.7', ...e }, T).slice(0, -1);
}

const oldPlan = planOf([
  route('app.example.com', { name: 'app', policy: 'allow if groups has "staff"' }),
  route('api.example.com', { name: 'api', prefix: '/', policy: 'allow if claim/dept is "eng"' }),
  route('www.example.com', { name: 'www', allow_public_unauthenticated_access: true }),
]);
const newPlan = planOf([
  route('app.example.com', { name: 'app', policy: 'allow if groups has "admins"' }),
  route('api.example.com', { name: 'api-admin', prefix: '/admin', policy: 'allow if claim/dept is "eng"', to: 'http://127.0.0.1:9001' }),
  route('api.example.com', { name: 'api', prefix: '/', policy: 'allow if claim/dept is "eng"' }),
  route('www.example.com', { name: 'www', allow_public_unauthenticated_access: true }),
]);

describe('replayLogs', () => {
  it('counts outcome, route and reason changes, with file:line examples, and says what it could not replay', async () => {
    const staff = { user: 'bob', email: 'bob@example.com', groups: ['staff'], claims: { dept: ['eng'] } };
    const admin = { user: 'alice', email: 'alice@example.com', groups: ['admins', 'staff'], claims: { dept: ['eng'] } };
    const log = [
      '{"level":"info","time":"2026-01-05T12:00:00.000Z","service":"svc","msg":"listening","port":8443}',
      line({ host: 'www.example.com', path: '/', route: 'www', decision: 'allow', upstream: '127.0.0.1:9000' }),
      line({ host: 'app.example.com', path: '/', route: 'app', decision: 'allow', upstream: '127.0.0.1:9000', ...staff }), // allowed → denied
      line({ host: 'app.example.com', path: '/x', route: 'app', decision: 'allow', upstream: '127.0.0.1:9000', ...staff }), // allowed → denied
      line({ host: 'app.example.com', path: '/', route: 'app', decision: 'allow', upstream: '127.0.0.1:9000', ...admin }), // unchanged
      line({ host: 'app.example.com', path: '/', route: 'app', decision: 'unauthenticated', status: 401 }), // anonymous: unchanged
      line({ host: 'api.example.com', path: '/admin/users', route: 'api', decision: 'allow', upstream: '127.0.0.1:9000', ...admin }), // route changed (and upstream)
      line({ host: 'api.example.com', path: '/v1', route: 'api', decision: 'allow', upstream: '127.0.0.1:9000', ...admin }), // unchanged
      line({ host: 'app.example.com', path: '/', route: 'app', decision: 'allow', upstream: '127.0.0.1:9000', user: 'old', email: 'old@example.com' }), // logged without groups
      line({ host: 'api.example.com', path: '/v1', route: 'api', decision: 'allow', upstream: '127.0.0.1:9000', user: 'carol', groups: [], claims: {} }), // claim not logged
      line({ host: 'app.example.com', path: '/', route: 'app', decision: 'allow', upstream: '127.0.0.1:9000', ...staff, identityCut: true }), // cut
      line({ host: 'app.example.com', path: '/', decision: 'http-1.0-unsupported', status: 505 }),
      line({ host: 'nowhere.example.com', path: '/', decision: 'not_found', status: 404 }),
      'not json at all',
      '{"msg":"request","host":"app.example.com"', // not svc's line, and not JSON
      line({ host: 'app.example.com', path: '/', route: 'app', decision: 'allow', ...staff }).slice(0, 90), // svc's line, cut in the middle
    ].join('\n');
    const plain = join(dir, 'access.log');
    writeFileSync(plain, `${log}\n`);
    const rotated = join(dir, 'access.log.1');
    writeFileSync(rotated, gzipSync(`${line({ host: 'app.example.com', path: '/', route: 'app', decision: 'deny', status: 403, user: 'eve', groups: ['admins'], claims: {} })}\n`)); // denied → allowed

    const r = await replayLogs([plain, rotated], oldPlan, newPlan);
    expect(r.files).toEqual([
      { path: plain, gzip: false, lines: 16, truncated: false },
      { path: rotated, gzip: true, lines: 1, truncated: false },
    ]);
    expect(r.skipped).toEqual({ other: 1, junk: 2, overlong: 0 });
    expect(r.requests).toBe(14);
    expect(r.notReplayable).toEqual([
      { reason: 'claim-not-logged', count: 1, examples: [`${plain}:10`] },
      { reason: 'identity-cut', count: 1, examples: [`${plain}:11`] },
      { reason: 'identity-not-logged', count: 1, examples: [`${plain}:9`] },
      { reason: 'line-cut', count: 1, examples: [`${plain}:16`] },
      { reason: 'refused-at-door', count: 1, examples: [`${plain}:12`] },
    ]);
    expect(r.replayed).toBe(9);
    expect(r.changed).toBe(4);
    expect(r.unchanged).toBe(5);
    expect(r.changes.map((g) => [g.change, g.old?.label ?? null, g.new?.label ?? null, g.from, g.to, g.reasons, g.count, g.examples])).toEqual([
      ['allowed-to-denied', 'app', 'app', 'allow', 'deny', ['groups-unauthorized'], 2, [`${plain}:3`, `${plain}:4`]],
      ['denied-to-allowed', 'app', 'app', 'deny', 'allow', ['groups-unauthorized'], 1, [`${rotated}:1`]],
      ['route-changed', 'api', 'api-admin', 'allow', 'allow', ['claim-ok'], 1, [`${plain}:7`]],
    ]);
    expect(r.oldDiffers.count).toBe(0);
    const text = renderReplayText(r);
    expect(text).toContain('- allowed → denied: app (#0): allow → deny [groups-unauthorized]: 2 requests');
    expect(text).toContain(`e.g. ${plain}:3, ${plain}:4`);
    expect(text).toContain('identity-not-logged: 1:');
  });

  it('tells another outcome (denied, then no route) and other upstreams (the same route forwarding elsewhere) apart', async () => {
    const p = join(dir, 'kinds.log');
    const moved = planOf([route('www.example.com', { name: 'www', allow_public_unauthenticated_access: true, to: 'http://127.0.0.1:9009' })]);
    writeFileSync(
      p,
      [
        line({ host: 'www.example.com', path: '/', route: 'www', decision: 'allow', upstream: '127.0.0.1:9000' }),
        line({ host: 'app.example.com', path: '/', route: 'app', decision: 'deny', status: 403, user: 'eve', groups: [], claims: {} }),
      ].join('\n'),
    );
    const r = await replayLogs([p], oldPlan, moved);
    expect(r.changes.map((g) => [g.change, g.old?.label ?? null, g.new?.label ?? null, g.from, g.to, g.count])).toEqual([
      ['outcome-changed', 'app', null, 'deny', 'not_found', 1],
      ['upstream-changed', 'www', 'www', 'allow', 'allow', 1],
    ]);
    expect(renderReplayText(r)).toContain('~ outcome changed: app (old #0) → no route: deny → not_found [no-route]: 1 request');
  });

  it('keeps a few examples per group however many requests change (the report does not grow with the log)', async () => {
    const p = join(dir, 'many.log');
    const one = line({ host: 'app.example.com', path: '/', route: 'app', decision: 'allow', upstream: '127.0.0.1:9000', user: 'bob', groups: ['staff'], claims: { dept: ['eng'] } });
    writeFileSync(p, `${one}\n`.repeat(20_000));
    const r = await replayLogs([p], oldPlan, newPlan);
    expect(r.changes).toHaveLength(1);
    expect(r.changes[0]!.count).toBe(20_000);
    expect(r.changes[0]!.examples).toEqual([`${p}:1`, `${p}:2`, `${p}:3`]);
  });

  it('says when the recorded decision is not what OLD decides (the log came from another plan)', async () => {
    const p = join(dir, 'other-plan.log');
    writeFileSync(p, `${line({ host: 'app.example.com', path: '/', route: 'app', decision: 'deny', status: 403, user: 'bob', groups: ['staff'], claims: {} })}\n`);
    const r = await replayLogs([p], oldPlan, newPlan);
    expect(r.oldDiffers).toEqual({ reason: 'old-plan-differs', count: 1, examples: [`${p}:1`] });
  });

  it('never replays a line whose fields do not have the types svc writes: counted as junk (docs/security.md S69)', async () => {
    const p = join(dir, 'forged.log');
    const good = JSON.parse(line({ host: 'app.example.com', path: '/', route: 'app', decision: 'allow', user: 'bob', groups: ['staff'], claims: {} })) as Record<string, unknown>;
    const forged = [{ ...good, groups: 'admins' }, { ...good, claims: { dept: 'eng' } }, { ...good, device: { id: 'x', approved: 'yes' } }, { ...good, time: 'yesterday' }, { ...good, status: '200' }];
    writeFileSync(p, forged.map((f) => JSON.stringify(f)).join('\n'));
    const r = await replayLogs([p], oldPlan, newPlan);
    expect(r.skipped.junk).toBe(forged.length);
    expect(r.requests).toBe(0);
  });

  it('never replays as anonymous a request answered while the session store was down, and decides at the line\'s time less its ms', async () => {
    expect(SESSION_STORE_UNAVAILABLE).toBe(RUNTIME_SESSION_STORE_UNAVAILABLE);
    const p = join(dir, 'outage.log');
    const atNine = planOf([route('app.example.com', { name: 'app', policy: 'allow if groups has "staff" and time_of_day after "08:00" before "10:00"' })]);
    const always = planOf([route('app.example.com', { name: 'app', policy: 'allow if groups has "staff"' })]);
    const outage = line({ host: 'app.example.com', path: '/', route: 'app', decision: 'unavailable', status: 503, reasons: ['session-store-unavailable'] });
    // Written at 12:00:00 UTC after 3 h: decided at 09:00 UTC, inside 08:00–10:00 (allowed under both; at 12:00 OLD would deny).
    const slow = line({ host: 'app.example.com', path: '/', route: 'app', decision: 'allow', ms: 3 * 3600_000, user: 'bob', groups: ['staff'], claims: {} });
    writeFileSync(p, `${outage}\n${slow}\n`);
    const r = await replayLogs([p], atNine, always);
    expect(r.notReplayable).toEqual([{ reason: 'session-store-unavailable', count: 1, examples: [`${p}:1`] }]);
    expect(r).toMatchObject({ requests: 2, replayed: 1, unchanged: 1, changed: 0 });
    expect(r.oldDiffers.count).toBe(0);
  });

  it('fails with SVC_ERR_REPLAY_READ on a file it cannot read', async () => {
    await expect(replayLogs([join(dir, 'missing.log')], oldPlan, newPlan)).rejects.toBeInstanceOf(ReplayReadError);
  });
});
