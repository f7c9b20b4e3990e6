/**
 * `svc test` through `main(argv, io)`: the shipped example (fixtures/policy-tests/quickstart.yaml)
 * passes, which is how CI exercises the quickstart's policy; a deliberately failing file exits 1 with
 * each failure's trace; coverage; test-file mistakes located at file:line:col (exit 2).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../cli/main.ts';
import type { TestReport } from '../../cli/test-command.ts';

const FIXTURES = join(import.meta.dirname, '../../fixtures');
const EXAMPLE = join(FIXTURES, 'policy-tests/quickstart.yaml');
const FAILING = join(FIXTURES, 'policy-tests/failing/wrong-expectations.yaml');
const QUICKSTART = join(FIXTURES, 'quickstart/config.yaml');

async function svc(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

/** Writes a test file (naming the quickstart config by absolute path) into a temp dir. */
function testFile(body: string, name = 'tests.yaml'): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-policy-test-'));
  const file = join(dir, name);
  writeFileSync(file, body.replaceAll('QUICKSTART', QUICKSTART));
  return file;
}

describe('svc test', () => {
  it('the shipped quickstart example passes with full coverage', async () => {
    const r = await svc(['test', EXAMPLE]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).not.toMatch(/FAIL/);
    expect(r.out).toMatch(/^ {2}ok {4}bob from another domain, in no group, is denied$/m);
    expect(r.out.trimEnd().split('\n').at(-1)).toBe('14 cases, 14 passed, 0 failed; coverage: routes 2/2, rules 2/2');
  });

  it('a failing case exits 1 and prints the mismatch and the explain trace', async () => {
    const r = await svc(['test', FAILING]);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/^ {2}ok {4}alice reads the app$/m);
    expect(r.out).toMatch(/^ {2}FAIL {2}bob is wrongly expected to be allowed \(.*wrong-expectations\.yaml:10:5\)$/m);
    expect(r.out).toMatch(/^ +outcome: expected allow, got deny$/m);
    expect(r.out).toMatch(/^ +status: expected 200, got 403$/m);
    // the trace: route with file:line, leaves, verdict
    expect(r.out).toMatch(/^ +route +#1 app \(id app\) at .*quickstart\/config\.yaml:21:5$/m);
    expect(r.out).toMatch(/^ +false +domain is "example\.com" +domain-unauthorized$/m);
    expect(r.out).toMatch(/^ +verdict +deny 403: domain-unauthorized, groups-unauthorized$/m);
    expect(r.out).toMatch(/^ +route: expected "app", got "public-docs"$/m);
    expect(r.out).toMatch(/^ +upstream\.url: expected "http:\/\/127\.0\.0\.1:9002\/guide", got "http:\/\/127\.0\.0\.1:9001\/guide"$/m);
    expect(r.out).toMatch(/^ +upstream\.headers\.x-forwarded-proto: expected "http", got "https"$/m);
    // coverage: the DELETE rule was never true
    expect(r.out).toMatch(/^rules no case made true:\n {2}#1 app rule 2: deny if http_method in \["DELETE"\] and not groups has "ops" \(.*config\.yaml:21:5\)$/m);
    expect(r.out.trimEnd().split('\n').at(-1)).toBe('3 cases, 1 passed, 2 failed; coverage: routes 2/2, rules 1/2');
  });

  it('runs several files and sums coverage once per config', async () => {
    const r = await svc(['test', EXAMPLE, FAILING]);
    expect(r.code).toBe(1);
    expect(r.out.trimEnd().split('\n').at(-1)).toBe('17 cases, 15 passed, 2 failed; coverage: routes 2/2, rules 2/2');
  });

  it('reports routes never matched and rules never true', async () => {
    const file = testFile(`config: QUICKSTART
cases:
  - name: bob is denied
    request: {url: "https://app.localhost:8443/"}
    identity: {user: bob, email: bob@other.example}
    expect: {outcome: deny}
`);
    const r = await svc(['test', file]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^routes no case reached:\n {2}#0 public-docs \(.*config\.yaml:17:5\)$/m);
    expect(r.out).toMatch(/^ {2}#1 app rule 1: allow if domain is "example\.com" or groups has "admins" /m);
    expect(r.out).toMatch(/^ {2}#1 app rule 2: deny if /m);
    expect(r.out.trimEnd().split('\n').at(-1)).toBe('1 cases, 1 passed, 0 failed; coverage: routes 1/2, rules 0/2');
  });

  it('--format json gives every case, its decision, failures and coverage', async () => {
    const r = await svc(['test', FAILING, '--format', 'json']);
    expect(r.code).toBe(1);
    const j = JSON.parse(r.out) as TestReport;
    expect(j.summary).toEqual({ cases: 3, passed: 1, failed: 2 });
    const bob = j.files[0]!.cases[1]!;
    expect(bob.passed).toBe(false);
    expect(bob.failures).toEqual(['outcome: expected allow, got deny', 'status: expected 200, got 403']);
    expect(bob.result).toMatchObject({ outcome: 'deny', status: 403, route: { id: 'app' } });
    expect(j.coverage.rules).toMatchObject({ covered: 1, total: 2, uncovered: [{ route: { id: 'app' }, rule: 1 }] });
    expect(j.coverage.routes).toMatchObject({ covered: 2, total: 2, uncovered: [] });
  });

  it('expect.route matches a route id, null means no route, and upstream header null means absent', async () => {
    const file = testFile(`config: QUICKSTART
cases:
  - name: by id
    request: {url: "https://docs.localhost:8443/", headers: {X-Svc-Claim-Email: x@example.com}}
    expect: {outcome: allow, route: public-docs, upstream: {headers: {x-svc-claim-email: null, X-Forwarded-Proto: https}}}
  - name: no route expected but one found
    request: {url: "https://docs.localhost:8443/"}
    expect: {outcome: allow, route: null}
  - name: header expected absent but present
    request: {url: "https://docs.localhost:8443/"}
    expect: {outcome: allow, upstream: {headers: {x-forwarded-for: null}}}
  - name: nothing forwarded expected
    request: {url: "https://docs.localhost:8443/"}
    expect: {outcome: allow, upstream: null}
`);
    const r = await svc(['test', file, '--format', 'json']);
    expect(r.code).toBe(1);
    const cases = (JSON.parse(r.out) as TestReport).files[0]!.cases;
    expect(cases.map((c) => c.failures)).toEqual([
      [],
      ['route: expected none, got "public-docs"'],
      ['upstream.headers.x-forwarded-for: expected absent, got "127.0.0.1"'],
      ['upstream: expected nothing forwarded, got "http://127.0.0.1:9001/"'],
    ]);
  });
});

describe('svc test file errors (exit 2, located)', () => {
  it('schema violations are reported with the file and the YAML line:col', async () => {
    const file = testFile(`config: QUICKSTART
cases:
  - name: typo
    request: {url: "https://a.example/", methd: GET}
    identity: {user: 3}
    expect: {outcome: allowed}
`);
    const r = await svc(['test', file]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`${file}:4:42: error: /cases/0/request has unknown property \`methd\``);
    expect(r.err).toContain(`${file}:5:22: error: /cases/0/identity/user must be string`);
    expect(r.err).toContain(`${file}:6:23: error: /cases/0/expect/outcome must be one of \`allow\``);
  });

  it('a missing required field is located at its parent', async () => {
    const file = testFile(`config: QUICKSTART
cases:
  - name: no expectation
    request: {url: "https://a.example/"}
`);
    const r = await svc(['test', file]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`${file}:3:5: error: /cases/0 must have required property 'expect'`);
  });

  it('YAML syntax errors and bad times are located', async () => {
    const broken = testFile('config: a\nconfig: b\ncases: []\n');
    const r1 = await svc(['test', broken]);
    expect(r1.code).toBe(2);
    expect(r1.err).toMatch(new RegExp(`^${broken.replaceAll('.', '\\.')}:2:1: error: `, 'm'));
    const time = testFile(`config: QUICKSTART
cases:
  - name: when
    request: {url: "https://a.example/", time: yesterday}
    expect: {outcome: allow}
`);
    const r2 = await svc(['test', time]);
    expect(r2.code).toBe(2);
    expect(r2.err).toContain(`${time}:4:48: error: time \`yesterday\` is not an ISO 8601 date and time`);
  });

  it('a missing test file, a missing config, or a config with errors exits 2', async () => {
    const missing = await svc(['test', join(tmpdir(), 'no-such-policy-tests.yaml')]);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/cannot read the test file/);

    const noConfig = testFile('config: nope.yaml\ncases:\n  - {name: a, request: {url: "https://a.example/"}, expect: {outcome: allow}}\n');
    const r = await svc(['test', noConfig]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/config `.*nope\.yaml` cannot be used/);

    const badConfig = testFile('routes: 3\n', 'config.yaml');
    const tests = join(badConfig, '..', 'tests.yaml');
    writeFileSync(tests, 'config: config.yaml\ncases:\n  - {name: a, request: {url: "https://a.example/"}, expect: {outcome: allow}}\n');
    const r3 = await svc(['test', tests]);
    expect(r3.code).toBe(2);
    expect(r3.err).toMatch(/error SVC\d{4}/);
  });

  it('a file error wins over failures in other files', async () => {
    const r = await svc(['test', FAILING, join(tmpdir(), 'no-such-policy-tests.yaml')]);
    expect(r.code).toBe(2);
    expect(r.out).toMatch(/FAIL/);
  });
});
