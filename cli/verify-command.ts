/**
 * `svc verify -config config.yaml properties.yaml` (and `svc compile --check --verify`): proves the
 * properties of a properties file for the compiled plan, or prints a counterexample svc's real
 * programs confirmed (docs/verify.md). Thin: reading the file is compiler/verify/, proving is
 * cli/verify/prove.ts on the exact check's encoding (cli/diff/exact/).
 *
 * Exit status, as `svc test`: 0 when every property holds; 1 when one is violated or not proved
 * (a property the solver could not settle is not a pass); 2 when the properties file or the config
 * cannot be used (unreadable, invalid, a config with errors). 2 wins over 1.
 */
import { readFileSync } from 'node:fs';
import { bindProperties, readProperties, renderText, toJsonDiagnostic, unreadableProperties, type Diagnostic, type PropertiesResult, type Property } from '../compiler/index.ts';
import type { PlanEnvelope } from '../compiler/plan/types.ts';
import { buildIndex } from '../runtime/plan/index.ts';
import type { CommandIo } from './explain-command.ts';
import { loadPlanInput } from './plan-input.ts';
import { renderVerifyJson, renderVerifyText, summarize, type VerifyReport } from './verify/render.ts';
import type { PropertyReport } from './verify/prove.ts';

export interface VerifyOptions {
  readonly format: 'text' | 'json';
  /** The time each property may take (ms). */
  readonly budgetMs: number;
}

/** Runs `svc verify` for a config (or plan) file. */
export async function verifyCommand(configPath: string | undefined, propertiesPath: string, opts: VerifyOptions, io: CommandIo): Promise<number> {
  if (configPath === undefined) {
    io.err('svc verify: -config <file> is required (the config or plan whose properties are proved)\n');
    return 2;
  }
  const input = loadPlanInput(configPath);
  if (!input.ok) {
    io.err(`${input.message}svc verify: config \`${configPath}\` cannot be used\n`);
    return 2;
  }
  return verifyPlan(input.plan, configPath, propertiesPath, opts, io);
}

/** Reads, checks and proves a properties file against a compiled plan; returns the exit status. */
export async function verifyPlan(plan: PlanEnvelope, configLabel: string, propertiesPath: string, opts: VerifyOptions, io: CommandIo): Promise<number> {
  let read: PropertiesResult;
  try {
    read = readProperties(propertiesPath, readFileSync(propertiesPath, 'utf8'));
  } catch (e) {
    read = unreadableProperties(propertiesPath, (e as Error).message);
  }
  const diagnostics: Diagnostic[] = [...read.diagnostics];
  const properties: readonly Property[] | undefined = read.properties;
  if (properties) diagnostics.push(...bindProperties(properties, plan));
  if (diagnostics.length) io.err(renderText(diagnostics));
  if (!properties || diagnostics.some((d) => d.severity === 'error')) {
    io.err(`svc verify: the properties file \`${propertiesPath}\` cannot be used\n`);
    // JSON readers get the diagnostics in the report's shape, with nothing proved.
    if (opts.format === 'json') io.out(renderVerifyJson({ file: propertiesPath, config: configLabel, budgetMs: opts.budgetMs, diagnostics: diagnostics.map(toJsonDiagnostic), properties: [], summary: summarize([]) }));
    return 2;
  }
  const { z3, stopZ3 } = await import('./diff/exact/z3.ts');
  const { proveProperty } = await import('./verify/prove.ts');
  const index = buildIndex(plan.body);
  const reports: PropertyReport[] = [];
  try {
    const z = await z3();
    // Config files read once, to locate the rules of counterexamples.
    const sources = new Map<string, string | undefined>();
    const readSource = (file: string): string | undefined => {
      if (!sources.has(file)) {
        try {
          sources.set(file, readFileSync(file, 'utf8'));
        } catch {
          sources.set(file, undefined);
        }
      }
      return sources.get(file);
    };
    for (const p of properties) reports.push(await proveProperty(z, plan, index, p, { budgetMs: opts.budgetMs, readSource }));
  } finally {
    await stopZ3();
  }
  const report: VerifyReport = { file: propertiesPath, config: configLabel, budgetMs: opts.budgetMs, diagnostics: diagnostics.map(toJsonDiagnostic), properties: reports, summary: summarize(reports) };
  io.out(opts.format === 'json' ? renderVerifyJson(report) : renderVerifyText(report));
  return report.summary.holds === report.summary.properties ? 0 : 1;
}
