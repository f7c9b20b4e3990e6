/**
 * `svc diff OLD NEW --replay` on real traffic: a real `svc run` (bin/svc) signs in two users of the
 * dev OpenID provider with different groups (alice: admins, staff; bob: guests), serves a known mix
 * of public, allowed and denied requests, and its own access log (standard output, interleaved with
 * its other lines) is split into a rotated gzip'd file and the current one. `svc diff` then replays
 * it against a config that narrows a policy and adds a route shadowing another: the exact counts and
 * groups, and OLD's replay agreeing with every decision svc recorded.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevIdp } from '../../demo/dev-idp.ts';
import type { ReplayReport } from '../../cli/diff/replay/types.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';
import { HttpBrowser } from '../support/http-browser.ts';
import { freePort, localhostSignInSettings, startLocalhostIdp } from './auth-support.ts';
import { startSvcWithEnv, SVC, type EnvSvc } from './svc-process.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

describe('svc diff --replay on the access log of a real svc run', () => {
  let idp: DevIdp;
  let up: Upstream;
  let svc: EnvSvc | undefined;
  let port = 0;
  const cfg = configDir();
  let newPath = '';

  beforeAll(async () => {
    port = await freePort();
    idp = await startLocalhostIdp(port);
    up = await startUpstream(echo);
    const settings = { ...BASE_SETTINGS, address: `127.0.0.1:${port}`, ...localhostSignInSettings(port, idp) };
    const app = `https://app.localhost:${port}`;
    const www = { name: 'www', from: `https://public.localhost:${port}`, to: up.url, allow_public_unauthenticated_access: true };
    const reports = { name: 'reports', from: app, prefix: '/reports', to: up.url, policy: 'allow if groups has "staff"' };
    cfg.writeRaw(stringify({ ...settings, routes: [www, reports, { name: 'app', from: app, to: up.url, policy: 'allow if domain is "example.com" or groups has "guests"' }] }));
    // NEW: `app` no longer lets guests in; `reports-v2` (admins only) shadows `reports`.
    newPath = cfg.file(
      'new.yaml',
      stringify({
        ...settings,
        routes: [www, { name: 'reports-v2', from: app, prefix: '/reports', to: up.url, policy: 'allow if groups has "admins"' }, reports, { name: 'app', from: app, to: up.url, policy: 'allow if domain is "example.com"' }],
      }),
    );
    svc = await startSvcWithEnv(cfg.path, ['--workers', '1'], {});
  }, 60_000);

  afterAll(async () => {
    await svc?.stop();
    await up?.close();
    await idp?.close();
    cfg.remove();
  });

  it('counts exactly what changes, by route and reason, and nothing it could not replay', async () => {
    const browser = () => new HttpBrowser((url) => (url.hostname.endsWith('.localhost') ? { port } : url.port === String(idp.port) ? { port: idp.port } : undefined));
    const anonymous = browser();
    const alice = browser();
    const bob = browser();
    const status = async (b: HttpBrowser, host: string, path: string) => (await b.request(`http://${host}.localhost:${port}${path}`)).status;

    // Public: unchanged.
    expect(await status(anonymous, 'public', '/')).toBe(200);
    expect(await status(anonymous, 'public', '/about')).toBe(200);
    // Sign-ins: their hops (the sign-in redirect, svc's own endpoints) are unchanged, but bob's
    // landing request on `app` is allowed through `guests`, which NEW drops.
    expect((await alice.signIn(`http://app.localhost:${port}/welcome`, 'alice@example.com')).at(-1)!.status).toBe(200);
    expect((await bob.signIn(`http://app.localhost:${port}/welcome`, 'bob@other.example')).at(-1)!.status).toBe(200);
    expect(await status(alice, 'app', '/')).toBe(200); // unchanged: domain example.com
    expect(await status(alice, 'app', '/reports/q1')).toBe(200); // route changed: reports → reports-v2
    expect(await status(alice, 'app', '/reports/q2')).toBe(200); // route changed
    expect(await status(bob, 'app', '/')).toBe(200); // allowed → denied
    expect(await status(bob, 'app', '/home')).toBe(200); // allowed → denied
    expect(await status(bob, 'app', '/reports/q1')).toBe(403); // denied by another route
    await svc!.stop();

    // The log as rotated: the first half compressed (access.log.1.gz), the rest current.
    const lines = svc!.out().split('\n'); // svc's output as it ran: access lines among its own
    const half = Math.floor(lines.length / 2);
    const rotated = cfg.file('access.log.1.gz', '');
    writeFileSync(rotated, gzipSync(`${lines.slice(0, half).join('\n')}\n`));
    const current = cfg.file('access.log', lines.slice(half).join('\n'));
    const accessLines = lines.filter((l) => l.includes('"msg":"request"'));
    expect(accessLines.length).toBeGreaterThan(10);
    // What replay needs is on the line, and no secret: groups, never a token or cookie.
    expect(accessLines.some((l) => l.includes('"user"') && l.includes('"groups":["admins","staff"]'))).toBe(true);
    expect(accessLines.join('\n')).not.toMatch(/_svc=|eyJ[A-Za-z0-9_-]{10,}\./);

    const diff = (format: string) =>
      new Promise<{ code: number; stdout: string }>((resolve) => {
        execFile(process.execPath, [SVC, 'diff', cfg.path, newPath, '--no-exact', '--format', format, '--replay', rotated, current], (err, stdout) => resolve({ code: err ? Number(err.code) : 0, stdout }));
      });
    const { code, stdout } = await diff('json');
    expect(code).toBe(1); // the plans differ; replay does not change the exit code
    const r = (JSON.parse(stdout) as { replay: ReplayReport }).replay;
    expect(r.files.map((f) => [f.gzip, f.truncated])).toEqual([
      [true, false],
      [false, false],
    ]);
    expect(r.requests).toBe(accessLines.length);
    expect(r.skipped.other).toBeGreaterThan(0); // svc's own lines (listening, …)
    expect(r.notReplayable).toEqual([]);
    expect(r.replayed).toBe(r.requests);
    // OLD decides every recorded request as svc did.
    expect(r.oldDiffers.count).toBe(0);
    expect(r.changed).toBe(6);
    expect(r.unchanged).toBe(r.replayed - 6);
    const groups = r.changes.map((g) => ({ change: g.change, old: g.old?.label, new: g.new?.label, from: g.from, to: g.to, reasons: g.reasons, count: g.count, examples: g.examples.length }));
    expect(groups).toEqual([
      { change: 'allowed-to-denied', old: 'app', new: 'app', from: 'allow', to: 'deny', reasons: ['domain-unauthorized'], count: 3, examples: 3 },
      { change: 'route-changed', old: 'reports', new: 'reports-v2', from: 'allow', to: 'allow', reasons: ['groups-ok'], count: 2, examples: 2 },
      { change: 'route-changed', old: 'reports', new: 'reports-v2', from: 'deny', to: 'deny', reasons: ['groups-unauthorized'], count: 1, examples: 1 },
    ]);
    const text = await diff('text');
    expect(text.stdout).toContain('- allowed → denied: app (old #2, new #3): allow → deny [domain-unauthorized]: 3 requests');
    expect(text.stdout).toContain('~ route changed: reports (old #1) → reports-v2 (#1): allow → allow [groups-ok]: 2 requests');
    // Each example names a line of one of the files, and that line is a request of bob's or alice's.
    for (const g of r.changes) {
      for (const ex of g.examples) {
        const m = /^(.*):(\d+)$/.exec(ex)!;
        const text = m[1] === rotated ? lines.slice(0, half)[Number(m[2]) - 1]! : lines.slice(half)[Number(m[2]) - 1]!;
        expect(text).toMatch(/"user":"(alice|bob)/);
      }
    }
  }, 90_000);
});
