import { writeFileSync } from 'node:fs';
import { compile, renderJson, renderText, summaryLine, isSecretPath } from '../compiler/index.ts';
import { grpcBindAddress, usesRemoteDatabroker } from '../runtime/grpc/plan-options.ts';
import { prettyJson } from '../compiler/plan/canonical-json.ts';
import type { PlanEnvelope } from '../compiler/plan/types.ts';
import { noteLine, settingUses } from '../runtime/plan/capabilities.ts';
import { nodeInput } from './node-input.ts';

export interface CompileOptions {
  readonly config?: string;
  readonly check?: boolean;
  readonly output?: string;
  readonly format: 'text' | 'json';
  readonly summary?: boolean;
}

/**
 * `svc compile`: returns the exit code (0 ok, 1 config errors, 2 I/O). `onPlan` receives the plan
 * of a config without errors (`--check --verify` proves its properties next).
 */
export function compileCommand(opts: CompileOptions, io: { out: (s: string) => void; err: (s: string) => void }, onPlan?: (plan: PlanEnvelope) => void): number {
  const result = compile(nodeInput(opts.config));
  const ioError = result.diagnostics.some((d) => d.code === 'SVC5002');
  if (opts.format === 'json') {
    io.out(renderJson(result.diagnostics, result.plan?.checksum));
  } else {
    io.err(renderText(result.diagnostics, isSecretPath));
    if (result.diagnostics.length > 0) io.err(`${summaryLine(result.diagnostics)}\n`);
  }
  if (ioError) return 2;
  if (!result.plan) return 1;
  onPlan?.(result.plan);
  // What svc run would refuse or honour only partly (runtime/plan/capabilities.ts): notes, not errors.
  if (opts.format === 'text') for (const u of settingUses(result.plan)) io.err(`${noteLine(u)}\n`);
  if (opts.check) {
    if (opts.format === 'text') io.err(`ok: ${result.plan.checksum}\n`);
    return 0;
  }
  if (opts.summary) {
    io.out(summarize(result.plan));
    return 0;
  }
  const text = prettyJson(result.plan);
  if (opts.output !== undefined) {
    try {
      writeFileSync(opts.output, text, { mode: 0o600 });
    } catch (e) {
      io.err(`error: cannot write plan to \`${opts.output}\`: ${(e as Error).message}\n`);
      return 2;
    }
    if (opts.format === 'text') io.err(`wrote ${opts.output} (${result.plan.checksum})\n`);
  } else if (opts.format === 'text') {
    io.out(text);
  }
  return 0;
}

/**
 * A short human summary of a plan: the checksum, the listeners svc run starts for it, the routes.
 * It names nothing svc run does not do: settings svc run does not implement are the notes on
 * standard error. The data broker role has no HTTP listener; the gRPC listener is named where svc
 * run serves the data broker (all-in-one holding its store, or `services: databroker`).
 */
export function summarize(plan: PlanEnvelope): string {
  const s = plan.body.settings;
  const hostPort = (a: { host: string; port: number }) => `${a.host || '*'}:${a.port}`;
  const redirect = s.server.httpRedirectAddress;
  const broker = s.mode.services === 'databroker';
  const servesGrpc = broker || (s.mode.services === 'all' && !usesRemoteDatabroker(s));
  const lines = [
    `plan ${plan.checksum}`,
    ...(broker ? [] : [`listen: ${hostPort(s.server.address)} (${s.server.insecure ? 'plain HTTP' : 'HTTPS'})`]),
    ...(redirect !== null && !s.server.insecure && !broker ? [`http-to-https redirect: ${hostPort(redirect)}`] : []),
    ...(servesGrpc ? [`grpc: ${grpcBindAddress(s)} (data broker, ${s.grpc.insecure ? 'plaintext' : 'TLS'})`] : []),
    ...(s.metrics.address !== null ? [`metrics: ${hostPort(s.metrics.address)} (${metricsProtection(s.metrics)}; /metrics, /healthz, /readyz)`] : []),
    `routes: ${plan.body.routes.length}`,
  ];
  for (const r of plan.body.routes) {
    const m = r.match;
    const matcher = m.kind === 'any' ? '' : m.kind === 'path' ? ` path ${m.path}` : m.kind === 'prefix' ? ` prefix ${m.prefix}` : ` regex ${m.regex}`;
    const target = r.action.kind === 'redirect' ? 'redirect' : r.action.upstreams.map((u) => u.url).join(', ');
    lines.push(`  ${r.index}. ${r.from.url}${matcher} -> ${target}${r.public ? ' (public)' : ''}`);
  }
  return `${lines.join('\n')}\n`;
}

/** How the metrics listener is protected, in the summary's words. */
function metricsProtection(m: PlanEnvelope['body']['settings']['metrics']): string {
  const parts = [m.certificate !== null ? 'HTTPS' : 'plain HTTP'];
  if (m.clientCa !== null) parts.push('client certificates');
  if (m.basicAuth !== null) parts.push('Basic auth');
  return parts.join(', ');
}
