/**
 * The report of `svc verify` as text (for people) and JSON (`--format json`, for CI), docs/verify.md
 * "Output".
 */
import type { JsonDiagnostic } from '../../compiler/index.ts';
import { witnessText } from '../diff/render-text.ts';
import type { Counterexample, PropertyReport, RuleAt } from './prove.ts';

/** `svc verify --format json`. */
export interface VerifyReport {
  readonly file: string;
  readonly config: string;
  /** The time each property may take (ms). */
  readonly budgetMs: number;
  /** Warnings about the file (errors stop the run before any proof). */
  readonly diagnostics: readonly JsonDiagnostic[];
  readonly properties: readonly PropertyReport[];
  readonly summary: { readonly properties: number; readonly holds: number; readonly violated: number; readonly notProved: number };
}

export function summarize(properties: readonly PropertyReport[]): VerifyReport['summary'] {
  const n = (r: PropertyReport['result']) => properties.filter((p) => p.result === r).length;
  return { properties: properties.length, holds: n('holds'), violated: n('violated'), notProved: n('not-proved') };
}

const WORD: Record<PropertyReport['result'], string> = { holds: 'holds     ', violated: 'VIOLATED  ', 'not-proved': 'NOT PROVED' };

function counterexampleLines(c: Counterexample): string[] {
  // witnessText ends in "(old → new)": the verify report states the decision on its own line.
  const request = witnessText({ ...c, old: '', new: '' }).replace(/ \( → \)$/, '');
  const lines = [`      counterexample: ${request.replace(/^e\.g\. /, '')}`];
  lines.push(c.route ? `      route     #${c.route.index} ${c.route.name ?? c.route.id} at ${c.route.at}` : '      route     none (404)');
  const by = c.allowedBy;
  const no = c.deniedBy;
  const rule = (x: RuleAt) => `rule ${x.rule} \`${x.text}\` ${x.exact ? `at ${x.at}` : `(policy at ${x.at})`}`;
  const denied = c.route === null ? 'absent: no route takes it (404)' : no === null ? `${c.decision}: no allow rule holds` : `${c.decision}: ${rule(no)}`;
  const decision = by === null ? denied : by.public ? `allow: public route (allow_public_unauthenticated_access at ${by.at})` : `allow: ${rule(by)}`;
  lines.push(`      decision  ${decision}`);
  lines.push(`      condition ${c.condition}`);
  return lines;
}

/** The text report: one block per property, then a summary line. */
export function renderVerifyText(r: VerifyReport): string {
  const lines = [`${r.file}: ${r.properties.length} propert${r.properties.length === 1 ? 'y' : 'ies'} against ${r.config} (budget ${r.budgetMs / 1000} s each)`];
  for (const p of r.properties) {
    lines.push(`  ${WORD[p.result]}  ${p.name} (${p.at}): ${p.form} ${p.condition}`);
    if (p.result === 'holds') lines.push(`      proved on ${p.hosts.length ? p.hosts.join(', ') : 'no host (no route host is in its scope)'}`);
    if (p.result === 'not-proved') lines.push(`      ${p.reason}`);
    if (p.counterexample) lines.push(...counterexampleLines(p.counterexample));
  }
  const s = r.summary;
  lines.push(`${s.properties} properties: ${s.holds} hold, ${s.violated} violated, ${s.notProved} not proved`);
  return `${lines.join('\n')}\n`;
}

export function renderVerifyJson(r: VerifyReport): string {
  return `${JSON.stringify(r, null, 2)}\n`;
}
