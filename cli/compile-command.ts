import { writeFileSync } from 'node:fs';
import { compile } from '../compiler/compile.ts';
import { renderJson } from '../compiler/diagnostics/render-json.ts';
import { renderText, summaryLine } from '../compiler/diagnostics/render-text.ts';
import { prettyJson } from '../compiler/plan/canonical-json.ts';
import type { PlanEnvelope } from '../compiler/plan/types.ts';
import { isSecretPath } from '../compiler/settings/secret-paths.ts';
import { nodeInput } from './node-input.ts';

export interface CompileOptions {
  readonly config?: string;
  readonly check?: boolean;
  readonly output?: string;
  readonly format: 'text' | 'json';
  readonly summary?: boolean;
}

/** `svc compile`: returns the exit code (0 ok, 1 config errors, 2 I/O). */
export function compileCommand(opts: CompileOptions, io: { out: (s: string) => void; err: (s: string) => void }): number {
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

/** A short human summary of a plan: mode, listeners, routes and the checksum. */
export function summarize(plan: PlanEnvelope): string {
  const s = plan.body.settings;
  const lines = [
    `plan ${plan.checksum}`,
    `services: ${s.mode.services}${s.mode.allInOne ? ' (all-in-one)' : ''}`,
    `listen: ${s.server.address.host || '*'}:${s.server.address.port} (${s.server.insecure ? 'plain HTTP' : 'HTTPS'}), gRPC ${s.grpc.address.host || '*'}:${s.grpc.address.port}`,
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
