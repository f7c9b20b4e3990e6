/**
 * `svc explain` through `main(argv, io)`: the JSON shape for every outcome, the text trace (route
 * location, every leaf, verdict, upstream or location), and usage errors (exit 2) and config errors
 * (exit 1).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { main } from '../../cli/main.ts';
import { BASE_SETTINGS } from '../support/compile-text.ts';

const QUICKSTART = join(import.meta.dirname, '../../fixtures/quickstart/config.yaml');
const ALICE = JSON.stringify({ user: 'alice', email: 'alice@example.com', groups: [] });
const BOB = JSON.stringify({ user: 'bob', email: 'bob@other.example', groups: ['staff'] });

async function svc(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

async function explainJson(args: string[]): Promise<Record<string, unknown>> {
  const r = await svc(['explain', '-config', QUICKSTART, '--format', 'json', ...args]);
  expect(r.err).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.out) as Record<string, unknown>;
}

const SHAPE_KEYS = ['route', 'outcome', 'status', 'reasons', 'upstream', 'location', 'policy'];
const APP_POLICY = 'allow if domain is "example.com" or groups has "admins"\ndeny if http_method in ["DELETE"] and not groups has "ops"';

/** A config with a redirect route and a time-limited route, written to a temp dir. */
function redirectConfig(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-explain-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    stringify({
      ...BASE_SETTINGS,
      routes: [
        { name: 'old', from: 'https://old.example.com', prefix: '/docs', redirect: { host_redirect: 'new.example.com', prefix_rewrite: '/manual', response_code: 308 }, allow_any_authenticated_user: true },
        { name: 'office-hours', from: 'https://app.example.com', to: 'http://127.0.0.1:9000', policy: 'allow if authenticated_user and time_of_day after "09:00" before "17:00" timezone "UTC"' },
      ],
    }),
  );
  return file;
}

describe('svc explain --format json', () => {
  it('allow: route, upstream URL, Host and every header, the assertion placeholder, the policy text', async () => {
    const j = await explainJson(['--url', 'https://app.localhost:8443/reports?y=1', '--identity', ALICE, '--header', 'Accept: text/html', '-H', 'X-Svc-Jwt-Assertion: forged']);
    expect(Object.keys(j)).toEqual(SHAPE_KEYS);
    expect(j).toEqual({
      route: { index: 1, id: 'app', name: 'app' },
      outcome: 'allow',
      status: 200,
      reasons: ['domain-ok'],
      upstream: {
        url: 'http://127.0.0.1:9002/reports?y=1',
        host: '127.0.0.1:9002',
        headers: {
          accept: 'text/html',
          'x-forwarded-for': '127.0.0.1',
          'x-forwarded-proto': 'https',
          'x-svc-claim-email': 'alice@example.com',
          'x-svc-jwt-assertion': '<signed JWT, added at request time>',
          host: '127.0.0.1:9002',
        },
      },
      location: null,
      policy: APP_POLICY,
    });
  });

  it('allow on a public route: no assertion, `allow if accept`', async () => {
    const j = await explainJson(['--url', 'https://docs.localhost:8443/guide', '-H', 'x-svc-jwt-assertion: forged']);
    expect(j).toEqual({
      route: { index: 0, id: 'public-docs', name: 'public-docs' },
      outcome: 'allow',
      status: 200,
      reasons: ['public-route'],
      upstream: { url: 'http://127.0.0.1:9001/guide', host: '127.0.0.1:9001', headers: { 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'https', host: '127.0.0.1:9001' } },
      location: null,
      policy: 'allow if accept',
    });
  });

  it('deny', async () => {
    const j = await explainJson(['--url', 'https://app.localhost:8443/', '--identity', BOB]);
    expect(Object.keys(j)).toEqual(SHAPE_KEYS);
    expect(j).toEqual({
      route: { index: 1, id: 'app', name: 'app' },
      outcome: 'deny',
      status: 403,
      reasons: ['domain-unauthorized', 'groups-unauthorized'],
      upstream: null,
      location: null,
      policy: APP_POLICY,
    });
  });

  it('unauthenticated: a browser is redirected to sign in, an API client gets 401', async () => {
    const browser = await explainJson(['--url', 'https://app.localhost:8443/a?b=c', '-H', 'Accept: text/html']);
    expect(browser).toEqual({
      route: { index: 1, id: 'app', name: 'app' },
      outcome: 'unauthenticated',
      status: 302,
      reasons: ['user-unauthenticated'],
      upstream: null,
      location: 'http://authenticate.localhost:8443/.svc/sign_in?svc_redirect_uri=https%3A%2F%2Fapp.localhost%3A8443%2Fa%3Fb%3Dc',
      policy: APP_POLICY,
    });
    const api = await explainJson(['--url', 'https://app.localhost:8443/a', '-H', 'Accept: application/json']);
    expect(api).toMatchObject({ outcome: 'unauthenticated', status: 401, location: null, upstream: null });
  });

  it('device criteria: the device page for a session without a device, 450 for a device that does not meet them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-explain-'));
    const file = join(dir, 'config.yaml');
    writeFileSync(file, stringify({ ...BASE_SETTINGS, routes: [{ name: 'dev', from: 'https://app.example.com', to: 'http://127.0.0.1:9000', policy: 'allow if device approved and device type "enclave_only"' }] }));
    const json = async (identity: unknown, accept: string) => {
      const r = await svc(['explain', '-config', file, '--format', 'json', '--url', 'https://app.example.com/x', '-H', `Accept: ${accept}`, '--identity', JSON.stringify(identity)]);
      expect(r.code).toBe(0);
      return JSON.parse(r.out) as Record<string, unknown>;
    };
    const user = { user: 'alice', groups: [], claims: {} };
    expect(await json(user, 'text/html')).toMatchObject({ outcome: 'unauthenticated', status: 302, reasons: ['device-unauthenticated'], location: 'https://app.example.com/.svc/webauthn?svc_redirect_uri=https%3A%2F%2Fapp.example.com%2Fx' });
    expect(await json(user, 'application/json')).toMatchObject({ outcome: 'unauthenticated', status: 401, location: null });
    expect(await json({ ...user, device: { id: 'c1', type: 'any', approved: true } }, 'text/html')).toMatchObject({ outcome: 'deny', status: 450, reasons: ['device-unauthorized'] });
    expect(await json({ ...user, device: { id: 'c1', type: 'enclave_only', approved: true } }, 'text/html')).toMatchObject({ outcome: 'allow', status: 200 });
    const text = await svc(['explain', '-config', file, '--url', 'https://app.example.com/x', '-H', 'Accept: text/html', '--identity', JSON.stringify(user)]);
    expect(text.out).toContain('browser: the device page');
  });

  it('redirect: the route policy is checked, then the location answered', async () => {
    const r = await svc(['explain', redirectConfig(), '--format', 'json', '--url', 'https://old.example.com/docs/intro?x=1', '--identity', ALICE]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({
      route: { index: 0, id: 'old', name: 'old' },
      outcome: 'redirect',
      status: 308,
      reasons: ['authenticated-user-ok'],
      upstream: null,
      location: 'https://new.example.com/manual/intro?x=1',
      policy: 'allow if authenticated_user',
    });
  });

  it('not_found', async () => {
    const j = await explainJson(['--url', 'https://nowhere.localhost:8443/', '--identity', ALICE]);
    expect(j).toEqual({ route: null, outcome: 'not_found', status: 404, reasons: ['no-route'], upstream: null, location: null, policy: '' });
  });

  it('bad_request: the target reaches the core as typed (an encoded slash is refused)', async () => {
    const j = await explainJson(['--url', 'https://app.localhost:8443/a%2Fb', '--identity', ALICE]);
    expect(j).toEqual({ route: null, outcome: 'bad_request', status: 400, reasons: ['target-forbidden-escape'], upstream: null, location: null, policy: '' });
  });

  it('bad_request: a second Host header is a duplicate', async () => {
    const j = await explainJson(['--url', 'https://app.localhost:8443/', '-H', 'Host: evil.example']);
    expect(j).toMatchObject({ outcome: 'bad_request', status: 400, reasons: ['host-duplicate'], route: null });
  });

  it('dot segments and %2e are not normalized by the CLI but by the core', async () => {
    const j = await explainJson(['--url', 'https://app.localhost:8443/a/%2e%2e/b/../c', '--identity', ALICE]);
    expect((j['upstream'] as { url: string }).url).toBe('http://127.0.0.1:9002/c');
  });

  it("svc's own endpoints are shown as allow with no route", async () => {
    const j = await explainJson(['--url', 'https://app.localhost:8443/.svc/sign_out']);
    expect(j).toEqual({ route: null, outcome: 'allow', status: 200, reasons: ['internal'], upstream: null, location: null, policy: '' });
  });

  it('--time feeds time criteria', async () => {
    const config = redirectConfig();
    const at = async (time: string) => {
      const r = await svc(['explain', config, '--format', 'json', '--url', 'https://app.example.com/', '--identity', ALICE, '--time', time]);
      expect(r.code).toBe(0);
      return JSON.parse(r.out) as { outcome: string; reasons: string[] };
    };
    expect(await at('2025-01-06T10:00:00Z')).toMatchObject({ outcome: 'allow' });
    expect(await at('2025-01-06T20:00:00Z')).toMatchObject({ outcome: 'deny', reasons: ['time-of-day-unauthorized'] });
  });
});

describe('svc explain (text)', () => {
  it('names the route with file:line, marks every leaf, and shows the upstream request', async () => {
    const r = await svc(['explain', '-config', QUICKSTART, '--url', 'https://app.localhost:8443/x', '--identity', ALICE]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^route +#1 app \(id app\) at .*fixtures\/quickstart\/config\.yaml:21:5$/m);
    expect(r.out).toMatch(/rule 1: allow if domain is "example\.com" or groups has "admins" +=> true/);
    expect(r.out).toMatch(/^ +true +domain is "example\.com" +domain-ok$/m);
    expect(r.out).toMatch(/^ +false +groups has "admins" +groups-unauthorized$/m);
    expect(r.out).toMatch(/rule 2: deny if http_method in \["DELETE"\] and not groups has "ops" +=> false/);
    expect(r.out).toMatch(/^ +false +http_method in \["DELETE"\] +http-method-unauthorized$/m);
    expect(r.out).toMatch(/^ +false +groups has "ops" +groups-unauthorized +\(under not\)$/m);
    expect(r.out).toMatch(/^verdict +allow 200: domain-ok$/m);
    expect(r.out).toMatch(/^upstream GET http:\/\/127\.0\.0\.1:9002\/x$/m);
    expect(r.out).toMatch(/^ +Host: 127\.0\.0\.1:9002$/m);
    expect(r.out).toMatch(/^ +x-svc-jwt-assertion: <signed JWT, added at request time>$/m);
  });

  it('marks session leaves unknown for an anonymous request and shows the sign-in location', async () => {
    const r = await svc(['explain', QUICKSTART, '--url', 'https://app.localhost:8443/', '-H', 'Accept: text/html']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^identity anonymous$/m);
    expect(r.out).toMatch(/^ +unknown +domain is "example\.com" +user-unauthenticated$/m);
    expect(r.out).toMatch(/^verdict +unauthenticated 302 /m);
    expect(r.out).toMatch(/^location http:\/\/authenticate\.localhost:8443\/\.svc\/sign_in\?svc_redirect_uri=/m);
  });

  it('shows the canonical path and the refusal reason', async () => {
    const ok = await svc(['explain', QUICKSTART, '--url', 'https://app.localhost:8443/%2e%2e/x', '--identity', ALICE]);
    expect(ok.out).toMatch(/^ +canonical app\.localhost:8443\/x$/m);
    const bad = await svc(['explain', QUICKSTART, '--url', 'https://app.localhost:8443/a%2Fb']);
    expect(bad.code).toBe(0);
    expect(bad.out).toMatch(/^route +none: the request was refused before routing$/m);
    expect(bad.out).toMatch(/^verdict +bad_request 400 \(target-forbidden-escape\)/m);
  });
});

describe('svc explain errors', () => {
  const url = ['--url', 'https://app.localhost:8443/'];

  it.each([
    ['not JSON', '{user: alice'],
    ['missing user', '{"email": "a@example.com"}'],
    ['groups not strings', '{"user": "a", "groups": [1]}'],
    ['unknown field', '{"user": "a", "group": ["x"]}'],
    ['not an object', '"alice"'],
  ])('a bad --identity (%s) exits 2 with a clear error', async (_, identity) => {
    const r = await svc(['explain', '-config', QUICKSTART, ...url, '--identity', identity]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^error: --identity: /);
    expect(r.out).toBe('');
  });

  it('reads --identity @file and reports an unreadable file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-identity-'));
    writeFileSync(join(dir, 'alice.json'), ALICE);
    const good = await svc(['explain', QUICKSTART, ...url, '--identity', `@${join(dir, 'alice.json')}`, '--format', 'json']);
    expect(good.code).toBe(0);
    expect(JSON.parse(good.out)).toMatchObject({ outcome: 'allow' });
    const missing = await svc(['explain', QUICKSTART, ...url, '--identity', `@${join(dir, 'nobody.json')}`]);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/cannot read identity file/);
  });

  it.each([
    ['no --url', ['explain', QUICKSTART]],
    ['no config', ['explain', ...url]],
    ['a relative URL', ['explain', QUICKSTART, '--url', '/x']],
    ['an ftp URL', ['explain', QUICKSTART, '--url', 'ftp://app.localhost:8443/']],
    ['a header without a colon', ['explain', QUICKSTART, ...url, '-H', 'Accept']],
    ['a bad time', ['explain', QUICKSTART, ...url, '--time', 'tuesday']],
    ['a missing config file', ['explain', '/nonexistent/config.yaml', ...url]],
    ['both -config and a positional', ['explain', QUICKSTART, '-config', QUICKSTART, ...url]],
  ])('%s exits 2', async (_, args) => {
    const r = await svc(args);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/error/);
  });

  it('a config with errors exits 1 with its diagnostics', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-explain-bad-'));
    writeFileSync(join(dir, 'config.yaml'), stringify({ ...BASE_SETTINGS, routes: [{ from: 'https://a.example.com/x', to: 'http://127.0.0.1:9000', allow_any_authenticated_user: true }] }));
    const r = await svc(['explain', join(dir, 'config.yaml'), ...url]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/error SVC\d{4} route-from-has-path/);
  });

  it('explains from a compiled plan file as well as from a config', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-explain-plan-'));
    const plan = join(dir, 'plan.json');
    expect((await svc(['compile', '-config', QUICKSTART, '-o', plan])).code).toBe(0);
    const r = await svc(['explain', plan, '--format', 'json', ...url, '--identity', BOB]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ outcome: 'deny', route: { id: 'app' } });
  });
});

describe('svc explain -X CONNECT (tcp+https routes)', () => {
  function tcpConfig(): string {
    const dir = mkdtempSync(join(tmpdir(), 'svc-explain-tcp-'));
    const file = join(dir, 'config.yaml');
    writeFileSync(
      file,
      stringify({
        ...BASE_SETTINGS,
        routes: [
          { name: 'web', from: 'https://redis.example.com', to: 'http://127.0.0.1:9000', allow_public_unauthenticated_access: true },
          { name: 'redis', from: 'tcp+https://redis.example.com:6379', to: 'tcp://127.0.0.1:6380', policy: 'allow if domain is "example.com"' },
        ],
      }),
    );
    return file;
  }
  const connect = (config: string, url: string, identity?: string) => svc(['explain', config, '-X', 'CONNECT', '--url', url, '--format', 'json', ...(identity === undefined ? [] : ['--identity', identity])]);

  it('finds the tcp route and decides it with the given identity', async () => {
    const config = tcpConfig();
    const alice = await connect(config, 'tcp+https://Redis.Example.com:6379', ALICE);
    expect(alice.err).toBe('');
    expect(JSON.parse(alice.out)).toMatchObject({ route: { index: 1, name: 'redis' }, outcome: 'allow', status: 200, upstream: { url: 'tcp://127.0.0.1:6380' }, policy: 'allow if domain is "example.com"' });
    expect(JSON.parse((await connect(config, 'tcp+https://redis.example.com:6379', BOB)).out)).toMatchObject({ route: { name: 'redis' }, outcome: 'deny', status: 403 });
    expect(JSON.parse((await connect(config, 'tcp+https://redis.example.com:6379')).out)).toMatchObject({ route: { name: 'redis' }, outcome: 'unauthenticated', status: 401, location: null });
    expect(JSON.parse((await connect(config, 'tcp+https://redis.example.com:6380')).out)).toMatchObject({ route: null, outcome: 'not_found', status: 404 });
    const text = await svc(['explain', config, '-X', 'CONNECT', '--url', 'tcp+https://redis.example.com:6379', '--identity', BOB]);
    expect(text.out).toMatch(/redis/);
    expect(text.out).toMatch(/deny/);
  });

  it('a tcp+https URL needs -X CONNECT, and CONNECT needs a tcp+https URL', async () => {
    const config = tcpConfig();
    for (const args of [['--url', 'tcp+https://redis.example.com:6379'], ['-X', 'CONNECT', '--url', 'https://redis.example.com/'], ['-X', 'CONNECT', '--url', 'tcp+https://redis.example.com:6379/x']]) {
      const r = await svc(['explain', config, ...args]);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/^error: url .*tcp\+https/);
    }
  });
});
