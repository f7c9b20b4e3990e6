/**
 * `svc verify` end to end through the command line (cli/main.ts):
 * - every `console` example of docs/verify.md is run and its output and exit status compared with
 *   the page (`UPDATE_GOLDEN=1` rewrites the page's outputs; review the diff like code);
 * - the JSON reports of the examples are golden files (fixtures/verify/*.expected.json), and every
 *   counterexample in them is confirmed by svc's real policy programs and by the reference
 *   interpreter (test/reference/);
 * - usage mistakes, an unknown route, an unreadable file and a config with errors exit 2.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import type { Identity } from '../../runtime/core/types.ts';
import { compilePolicy } from '../../runtime/policy/program.ts';
import { main } from '../../cli/main.ts';
import type { VerifyReport } from '../../cli/verify/render.ts';
import { firstMatchingRoute } from '../reference/interpreter.ts';
import { parseIp } from '../reference/ip.ts';
import { evaluatePolicy } from '../reference/policy.ts';
import { makeRequest } from '../reference/support.ts';
import { compileText } from '../support/compile-text.ts';

const ROOT = join(import.meta.dirname, '../..');
const DOC = join(ROOT, 'docs/verify.md');
const FIXTURES = join(ROOT, 'fixtures/verify');
const update = process.env['UPDATE_GOLDEN'] === '1';

/** Runs svc with `args` from the repository root; stdout and stderr as written, in order. */
async function svc(args: readonly string[]): Promise<{ code: number; output: string; out: string }> {
  let output = '';
  let out = '';
  const code = await main(args, {
    out: (s) => {
      output += s;
      out += s;
    },
    err: (s) => (output += s),
  });
  return { code, output, out };
}

/** Checksums change with the plan format; the page shows them as `sha256:…`. */
const mask = (s: string) => s.replace(/sha256:[0-9a-f]{64}/g, 'sha256:…');

interface Example {
  readonly args: string[];
  /** The block's text from after the command line to the end of `$ echo $?` and its answer. */
  readonly start: number;
  readonly end: number;
  readonly expected: string;
}

/** The ```console blocks of the page: `$ svc …`, its output, `$ echo $?`, the status. */
function examples(doc: string): Example[] {
  const out: Example[] = [];
  for (const m of doc.matchAll(/```console\n\$ svc ([^\n]*)\n([\s\S]*?)```/g)) {
    const start = m.index + '```console\n$ svc '.length + m[1]!.length + 1;
    out.push({ args: m[1]!.split(' '), start, end: start + m[2]!.length, expected: m[2]! });
  }
  return out;
}

describe('docs/verify.md examples', () => {
  let doc = readFileSync(DOC, 'utf8');
  const all = examples(doc);

  it('has examples of proofs, counterexamples and mistakes', () => {
    expect(all.length).toBeGreaterThanOrEqual(4);
  });

  it.each(all.map((e, i) => [e.args.join(' '), i] as const))('svc %s', async (_name, i) => {
    const e = all[i]!;
    const r = await svc(e.args);
    const actual = `${r.output}$ echo $?\n${r.code}\n`;
    if (update) {
      doc = readFileSync(DOC, 'utf8');
      const now = examples(doc)[i]!;
      writeFileSync(DOC, doc.slice(0, now.start) + mask(actual) + doc.slice(now.end));
      return;
    }
    expect(mask(actual)).toBe(e.expected);
  }, 120_000);
});

/** The plan of a fixture config (compiled as the command line does). */
function planOf(file: string): PlanEnvelope {
  const r = compileText(readFileSync(join(FIXTURES, file), 'utf8'));
  if (!r.plan) throw new Error(`${file}: ${r.diagnostics.map((d) => d.code).join(', ')}`);
  return r.plan;
}

describe('svc verify --format json', () => {
  it.each([
    ['config.yaml', 0],
    ['changed.yaml', 1],
  ] as const)('%s: golden report, counterexamples confirmed', async (config, status) => {
    const r = await svc(['verify', '-config', `fixtures/verify/${config}`, '--format', 'json', 'fixtures/verify/properties.yaml']);
    expect(r.code).toBe(status);
    const golden = join(FIXTURES, config.replace('.yaml', '.expected.json'));
    if (update) writeFileSync(golden, r.out);
    expect(existsSync(golden)).toBe(true);
    expect(r.out).toBe(readFileSync(golden, 'utf8'));
    const report = JSON.parse(r.out) as VerifyReport;
    const plan = planOf(config);
    const results = report.properties.map((p) => p.result);
    if (status === 0) expect(new Set(results)).toEqual(new Set(['holds']));
    else expect(results).toContain('violated');
    for (const p of report.properties) {
      const c = p.counterexample;
      if (!c) continue;
      const url = new URL(c.request.url);
      const identity = c.identity as Identity | null;
      // The reference interpreter routes the request where the report says and decides it alike.
      const ref = firstMatchingRoute(plan.body, makeRequest({ host: url.host, target: url.pathname, method: c.request.method }));
      expect(ref?.index ?? null).toBe(c.route?.index ?? null);
      const route = ref && plan.body.routes[ref.index];
      const input = { method: c.request.method, path: url.pathname, headers: {}, clientAddress: c.request.clientAddress, clientCertificate: null, nowMs: Date.parse(c.request.time), identity };
      const real = !route ? 'absent' : route.public ? 'allow' : compilePolicy(route.policy).verdict(input);
      const refVerdict = !route ? 'absent' : route.public ? 'allow' : evaluatePolicy(route.policy, { method: input.method, path: input.path, headers: {}, nowMs: input.nowMs, clientIp: parseIp(input.clientAddress)! }, identity).verdict;
      expect(real).toBe(c.decision);
      expect(refVerdict).toBe(c.decision);
      // And the condition's value breaks the claim.
      if (p.form === 'only') expect([c.decision, c.condition]).toEqual(['allow', expect.not.stringMatching(/^true$/)]);
      if (p.form === 'never') expect([c.decision, c.condition]).toEqual(['allow', expect.not.stringMatching(/^false$/)]);
      if (p.form === 'always') expect([c.decision === 'allow', c.condition]).toEqual([false, 'true']);
    }
  }, 120_000);
});

describe('docs/verify.md', () => {
  it('lists the properties of fixtures/verify/properties.yaml', () => {
    const block = /```yaml\n(properties:[\s\S]*?)```/.exec(readFileSync(DOC, 'utf8'))![1]!;
    expect(parse(block)).toEqual(parse(readFileSync(join(FIXTURES, 'properties.yaml'), 'utf8')));
  });
});

describe('svc verify: input errors exit 2', () => {
  it('a route name the plan does not have, also in JSON', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-verify-'));
    const file = join(dir, 'p.yaml');
    writeFileSync(file, 'properties:\n  - name: p\n    routes: [deploy]\n    only: groups has "ops"\n');
    const r = await svc(['verify', '-config', 'fixtures/verify/config.yaml', '--format', 'json', file]).finally(() => rmSync(dir, { recursive: true }));
    expect(r.code).toBe(2);
    expect(r.output).toContain(`${file}:3:14: error SVC6012 verify-unknown-route: no route of the plan is named \`deploy\``);
    const report = JSON.parse(r.out) as VerifyReport;
    expect(report.diagnostics.map((d) => [d.code, d.line, d.column])).toEqual([['SVC6012', 3, 14]]);
    expect(report.properties).toEqual([]);
  });

  it('compile --check --verify: a config with errors is 1, as svc compile', async () => {
    const r = await svc(['compile', '--check', '-config', 'fixtures/verify/properties.yaml', '--verify', 'fixtures/verify/properties.yaml']);
    expect(r.code).toBe(1);
    expect(r.output).not.toContain('properties against');
  });

  it('needs -config', async () => {
    const r = await svc(['verify', 'fixtures/verify/properties.yaml']);
    expect(r.code).toBe(2);
    expect(r.output).toContain('-config <file> is required');
  });

  it('refuses a budget that is not a duration', async () => {
    const r = await svc(['verify', '-config', 'fixtures/verify/config.yaml', '--budget', 'soon', 'fixtures/verify/properties.yaml']);
    expect(r.code).toBe(2);
    expect(r.output).toContain('is not a duration');
  });

  it('reports an unreadable properties file as SVC6001', async () => {
    const r = await svc(['verify', '-config', 'fixtures/verify/config.yaml', 'fixtures/verify/no-such-file.yaml']);
    expect(r.code).toBe(2);
    expect(r.output).toContain('error SVC6001 verify-file-unreadable');
  });

  it('refuses a config with errors', async () => {
    const r = await svc(['verify', '-config', 'fixtures/verify/properties.yaml', 'fixtures/verify/properties.yaml']);
    expect(r.code).toBe(2);
    expect(r.output).toContain('cannot be used');
  });

  it('--verify goes with --check in text', async () => {
    const r = await svc(['compile', '-config', 'fixtures/verify/config.yaml', '--verify', 'fixtures/verify/properties.yaml']);
    expect(r.code).toBe(2);
    expect(r.output).toContain('--verify goes with --check');
  });
});
