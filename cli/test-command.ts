/**
 * `svc test`: policy tests kept next to a config. Each YAML file names a config and lists requests
 * with the decisions svc must make; every case runs through the decision core against the compiled
 * plan, a failing case is printed with its explain trace, and rule coverage is reported.
 * docs/explain-and-test.md.
 *
 * Coverage: a route is covered when some case's request was routed to it; a policy rule is covered
 * when some case's explanation evaluated it to true. Public routes have no rules to cover (their
 * policy is never evaluated), and `tcp+https` routes are left out (they answer only CONNECT, which
 * a test case cannot express).
 *
 * Exit status: 0 when every case passes; 1 when a case fails; 2 when a test file or its config
 * cannot be used (unreadable, invalid, or a config with errors). 2 wins over 1.
 */
import { withClaimHeaders } from './with-claim-headers.ts';
import { resolve } from 'node:path';
import { printRule } from '../compiler/index.ts';
import type { PlanEnvelope } from '../compiler/plan/types.ts';
import { explainConnect, explainDecision } from '../runtime/request/decide.ts';
import { buildIndex, type PlanIndex } from '../runtime/plan/index.ts';
import type { CommandIo } from './explain-command.ts';
import { explainJson, renderExplainText, routeLabel, routeLocation, ruleIsTrue, type Explained, type ExplainJson } from './explain-render.ts';
import { loadPlanInput } from './plan-input.ts';
import { readPolicyTestFile, type Expectation, type PolicyTestCase } from './policy-test-file.ts';

/** One case's result. */
export interface CaseResult {
  readonly name: string;
  readonly at: string;
  readonly passed: boolean;
  /** One line per expectation not met: `status: expected 403, got 200`. */
  readonly failures: readonly string[];
  readonly result: ExplainJson;
}

/** A route no case reached. */
export interface UncoveredRoute {
  readonly config: string;
  readonly index: number;
  readonly id: string;
  readonly name: string | null;
  readonly at: string;
}

/** A policy rule no case made true. `rule` is 0-based in the route's policy. */
export interface UncoveredRule {
  readonly config: string;
  readonly route: { readonly index: number; readonly id: string; readonly name: string | null };
  readonly rule: number;
  readonly text: string;
  readonly at: string;
}

/** `svc test --format json`. */
export interface TestReport {
  readonly files: readonly { readonly file: string; readonly config: string | null; readonly errors: readonly string[]; readonly cases: readonly CaseResult[] }[];
  readonly coverage: {
    readonly routes: { readonly covered: number; readonly total: number; readonly uncovered: readonly UncoveredRoute[] };
    readonly rules: { readonly covered: number; readonly total: number; readonly uncovered: readonly UncoveredRule[] };
  };
  readonly summary: { readonly cases: number; readonly passed: number; readonly failed: number };
}

/** Coverage of one config, accumulated over every test file that names it. */
interface ConfigRun {
  readonly config: string;
  readonly plan: PlanEnvelope;
  readonly index: PlanIndex;
  readonly routes: Set<number>;
  /** `routeIndex:ruleIndex` of rules evaluated to true. */
  readonly rules: Set<string>;
}

/** Compares a decision with what the case expects; one message per mismatch. */
export function checkExpectation(expect: Expectation, got: ExplainJson): string[] {
  const out: string[] = [];
  const show = (v: unknown) => JSON.stringify(v);
  if (got.outcome !== expect.outcome) out.push(`outcome: expected ${expect.outcome}, got ${got.outcome}`);
  if (expect.status !== undefined && got.status !== expect.status) out.push(`status: expected ${expect.status}, got ${got.status}`);
  if (expect.route !== undefined) {
    const r = got.route;
    const ok = expect.route === null ? r === null : r !== null && (r.name === expect.route || r.id === expect.route);
    if (!ok) out.push(`route: expected ${expect.route === null ? 'none' : show(expect.route)}, got ${r === null ? 'none' : show(r.name ?? r.id)}`);
  }
  if (expect.reasons !== undefined && show(expect.reasons) !== show(got.reasons)) out.push(`reasons: expected ${show(expect.reasons)}, got ${show(got.reasons)}`);
  if (expect.location !== undefined && expect.location !== got.location) out.push(`location: expected ${show(expect.location)}, got ${show(got.location)}`);
  if (expect.upstream === null && got.upstream !== null) out.push(`upstream: expected nothing forwarded, got ${show(got.upstream.url)}`);
  if (expect.upstream) {
    const u = got.upstream;
    if (!u) out.push('upstream: expected a forwarded request, got nothing forwarded');
    else {
      if (expect.upstream.url !== undefined && u.url !== expect.upstream.url) out.push(`upstream.url: expected ${show(expect.upstream.url)}, got ${show(u.url)}`);
      if (expect.upstream.host !== undefined && u.host !== expect.upstream.host) out.push(`upstream.host: expected ${show(expect.upstream.host)}, got ${show(u.host)}`);
      for (const [name, want] of Object.entries(expect.upstream.headers ?? {})) {
        const have = u.headers[name.toLowerCase()];
        if (want === null && have !== undefined) out.push(`upstream.headers.${name.toLowerCase()}: expected absent, got ${show(have)}`);
        if (want !== null && have !== want) out.push(`upstream.headers.${name.toLowerCase()}: expected ${show(want)}, got ${have === undefined ? 'absent' : show(have)}`);
      }
    }
  }
  return out;
}

function indent(text: string, by: string): string {
  return text
    .split('\n')
    .map((l) => (l === '' ? l : by + l))
    .join('\n');
}

function runCase(run: ConfigRun, c: PolicyTestCase): { result: CaseResult; trace: string } {
  const x: Explained = withClaimHeaders(run.index, (c.request.method === 'CONNECT' ? explainConnect : explainDecision)(run.index, c.request, c.identity), c.identity);
  const json = explainJson(x);
  if (json.route && x.route) run.routes.add(json.route.index);
  if (x.route && x.policy) {
    const route = x.route;
    x.policy.rules.forEach((t, i) => {
      if (ruleIsTrue(t)) run.rules.add(`${route.index}:${i}`);
    });
  }
  const failures = checkExpectation(c.expect, json);
  const trace = failures.length ? renderExplainText(x, { plan: run.plan, request: c.request, url: c.url, identity: c.identity }) : '';
  return { result: { name: c.name, at: c.at, passed: failures.length === 0, failures, result: json }, trace };
}

function coverage(runs: Iterable<ConfigRun>): TestReport['coverage'] {
  let routesTotal = 0;
  let routesCovered = 0;
  let rulesTotal = 0;
  let rulesCovered = 0;
  const uncoveredRoutes: UncoveredRoute[] = [];
  const uncoveredRules: UncoveredRule[] = [];
  for (const run of runs) {
    for (const route of run.plan.body.routes) {
      if (route.from.scheme !== 'https') continue;
      const ref = { index: route.index, id: route.id, name: route.name };
      const at = routeLocation(run.plan, route);
      routesTotal++;
      if (run.routes.has(route.index)) routesCovered++;
      else uncoveredRoutes.push({ config: run.config, ...ref, at });
      if (route.public) continue;
      route.policy.rules.forEach((rule, i) => {
        rulesTotal++;
        if (run.rules.has(`${route.index}:${i}`)) rulesCovered++;
        else uncoveredRules.push({ config: run.config, route: ref, rule: i, text: printRule(rule), at });
      });
    }
  }
  return {
    routes: { covered: routesCovered, total: routesTotal, uncovered: uncoveredRoutes },
    rules: { covered: rulesCovered, total: rulesTotal, uncovered: uncoveredRules },
  };
}

/** Runs `svc test` over `files` and returns its exit status. Never throws for a user mistake. */
export function testCommand(files: readonly string[], opts: { readonly format: 'text' | 'json' }, io: CommandIo): number {
  const nowMs = Date.now();
  const runs = new Map<string, ConfigRun>();
  const report: TestReport['files'][number][] = [];
  const text: string[] = [];
  let fileError = false;
  for (const file of files) {
    const parsed = readPolicyTestFile(file, nowMs);
    if (!parsed.ok) {
      fileError = true;
      io.err(`${parsed.messages.join('\n')}\n`);
      report.push({ file, config: null, errors: parsed.messages, cases: [] });
      continue;
    }
    const t = parsed.value;
    const key = resolve(t.config);
    let run = runs.get(key);
    if (!run) {
      const input = loadPlanInput(t.config);
      if (!input.ok) {
        fileError = true;
        const message = `${file}: error: config \`${t.config}\` cannot be used`;
        io.err(`${input.message}${message}\n`);
        report.push({ file, config: t.config, errors: [message, input.message.trimEnd()], cases: [] });
        continue;
      }
      run = { config: t.config, plan: input.plan, index: buildIndex(input.plan.body), routes: new Set(), rules: new Set() };
      runs.set(key, run);
    }
    text.push(`${file}: ${t.cases.length} case${t.cases.length === 1 ? '' : 's'} against ${t.config}`);
    const results: CaseResult[] = [];
    for (const c of t.cases) {
      const { result, trace } = runCase(run, c);
      results.push(result);
      if (result.passed) text.push(`  ok    ${c.name}`);
      else text.push(`  FAIL  ${c.name} (${c.at})`, ...result.failures.map((f) => `          ${f}`), '        trace:', indent(trace, '          ').trimEnd());
    }
    report.push({ file, config: t.config, errors: [], cases: results });
  }
  const cov = coverage(runs.values());
  const all = report.flatMap((f) => f.cases);
  const passed = all.filter((c) => c.passed).length;
  const summary = { cases: all.length, passed, failed: all.length - passed };
  if (opts.format === 'json') {
    io.out(`${JSON.stringify({ files: report, coverage: cov, summary } satisfies TestReport, null, 2)}\n`);
  } else {
    if (cov.routes.uncovered.length) {
      text.push('routes no case reached:');
      for (const r of cov.routes.uncovered) text.push(`  ${routeLabel(r)} (${r.at})`);
    }
    if (cov.rules.uncovered.length) {
      text.push('rules no case made true:');
      for (const r of cov.rules.uncovered) text.push(`  ${routeLabel(r.route)} rule ${r.rule + 1}: ${r.text} (${r.at})`);
    }
    text.push(`${summary.cases} cases, ${summary.passed} passed, ${summary.failed} failed; coverage: routes ${cov.routes.covered}/${cov.routes.total}, rules ${cov.rules.covered}/${cov.rules.total}`);
    io.out(`${text.join('\n')}\n`);
  }
  return fileError ? 2 : summary.failed > 0 ? 1 : 0;
}
