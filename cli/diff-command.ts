/**
 * `svc diff OLD NEW`: compares two plans, each given as a config file (compiled) or a plan file
 * (loaded and checked). Thin: loading is cli/plan-input.ts, comparing is cli/diff/, the exact check
 * (the solver) is cli/diff/exact/.
 */
import { diffPlans } from './diff/diff.ts';
import { renderDiffJson } from './diff/render-json.ts';
import { renderDiffText } from './diff/render-text.ts';
import { loadPlanInput } from './plan-input.ts';
import { SvcError } from '../runtime/core/errors.ts';

export interface DiffOptions {
  readonly format: 'text' | 'json';
  /** The exact check's time budget in ms; `null`: no exact check (sampling only). Default 30 s. */
  readonly budgetMs?: number | null;
  /** Access logs whose requests are decided again under both plans (cli/diff/replay/). */
  readonly replay?: readonly string[];
  /** Show replay's progress on `io.err` (the caller decides: a terminal, or `--progress`). */
  readonly progress?: 'tty' | 'lines' | 'none';
}

/** The default time budget of the exact check (docs/diff.md). */
export const DEFAULT_BUDGET_MS = 30_000;

/**
 * Reads a `--budget` value: a duration (`30s`, `500ms`, `2m`, `1m30s`) or a number of seconds;
 * undefined when it is neither.
 */
export function parseBudget(text: string): number | undefined {
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) return undefined;
  return parts.reduce((sum, p) => sum + Number(p[1]) * units[p[2]!]!, 0);
}

/**
 * Runs `svc diff` and returns the exit code: 0 when the plans are equal (same checksum), 1 when they
 * differ, 2 when either side cannot be read, loaded or compiled (its diagnostics go to `io.err`), or
 * a `--replay` log cannot be read. When routes were added, removed or changed, the exact check runs
 * within the budget; neither its answers nor replay's counts change the exit code (docs/diff.md).
 */
export async function diffCommand(oldPath: string, newPath: string, opts: DiffOptions, io: { out: (s: string) => void; err: (s: string) => void }, env: NodeJS.ProcessEnv = process.env): Promise<number> {
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
  let diff = diffPlans(a.input.plan, b.input.plan);
  const budgetMs = opts.budgetMs === undefined ? DEFAULT_BUDGET_MS : opts.budgetMs;
  const routes = diff.routes;
  if (budgetMs !== null && !diff.equal && routes.added.length + routes.removed.length + routes.changed.length > 0) {
    const { exactCheck } = await import('./diff/exact/check.ts');
    const { z3, stopZ3 } = await import('./diff/exact/z3.ts');
    try {
      diff = { ...diff, exact: await exactCheck(await z3(), a.input.plan, b.input.plan, { budgetMs }) };
    } finally {
      await stopZ3();
    }
  }
  if (opts.replay !== undefined && opts.replay.length > 0) {
    const { replayLogs } = await import('./diff/replay/replay.ts');
    const { progressPrinter } = await import('./diff/replay/progress.ts');
    const progress = progressPrinter(opts.progress ?? 'none', io.err);
    try {
      diff = { ...diff, replay: await replayLogs(opts.replay, a.input.plan, b.input.plan, progress.update) };
    } catch (e) {
      progress.done();
      if (!(e instanceof SvcError)) throw e;
      io.err(`svc diff: --replay: ${e.message} (${e.code})\n`);
      return 2;
    }
    progress.done();
  }
  if (opts.format === 'json') io.out(renderDiffJson(diff));
  else io.out(renderDiffText(diff) + (diff.replay ? (await import('./diff/replay/render-text.ts')).renderReplayText(diff.replay) : ''));
  // Replay never changes the exit code: equal plans decide every request alike (docs/diff.md).
  return diff.equal ? 0 : 1;
}
