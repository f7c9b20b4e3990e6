/**
 * `svc diff OLD NEW`: compares two plans, each given as a config file (compiled) or a plan file
 * (loaded and checked). Thin: loading is cli/plan-input.ts, comparing is cli/diff/.
 */
import { diffPlans } from './diff/diff.ts';
import { renderDiffJson } from './diff/render-json.ts';
import { renderDiffText } from './diff/render-text.ts';
import { loadPlanInput } from './plan-input.ts';

export interface DiffOptions {
  readonly format: 'text' | 'json';
}

/**
 * Runs `svc diff` and returns the exit code: 0 when the plans are equal (same checksum), 1 when they
 * differ, 2 when either side cannot be read, loaded or compiled (its diagnostics go to `io.err`).
 */
export function diffCommand(oldPath: string, newPath: string, opts: DiffOptions, io: { out: (s: string) => void; err: (s: string) => void }, env: NodeJS.ProcessEnv = process.env): number {
  const sides = [
    { label: 'old', path: oldPath, input: loadPlanInput(oldPath, env) },
    { label: 'new', path: newPath, input: loadPlanInput(newPath, env) },
  ] as const;
  let failed = false;
  for (const s of sides) {
    if (s.input.ok) continue;
    io.err(`svc diff: cannot use the ${s.label} side \`${s.path}\`:\n${s.input.message}`);
    failed = true;
  }
  const [a, b] = sides;
  if (failed || !a.input.ok || !b.input.ok) return 2;
  const diff = diffPlans(a.input.plan, b.input.plan);
  io.out(opts.format === 'json' ? renderDiffJson(diff) : renderDiffText(diff));
  return diff.equal ? 0 : 1;
}
