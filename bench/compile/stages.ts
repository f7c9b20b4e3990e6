/**
 * Where compile time goes: runs the compiler's stage table on one generated config and prints the
 * milliseconds of CPU of each stage (median of five runs, after a warmup; CPU time, not wall time,
 * so other work on the machine disturbs it less). Run:
 * `npx tsx bench/compile/stages.ts [--routes 10000] [--format yaml|json]`.
 */
import { parse } from 'yaml';
import { Reporter } from '../../compiler/diagnostics/diagnostic.ts';
import { STAGES, type Work } from '../../compiler/pipeline.ts';
import { generateConfig } from './generate.ts';

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const routes = Number(arg('--routes') ?? '10000');
const format = arg('--format') ?? 'yaml';
const yaml = generateConfig(routes);
const text = format === 'json' ? JSON.stringify(parse(yaml), null, 1) : yaml;
const file = `bench.${format}`;

function timedRun(): number[] {
  const w: Work = { input: { configPath: file, env: {}, readFile: () => ({ ok: true, data: Buffer.from(text) }) }, files: new Set() };
  const r = new Reporter();
  const times: number[] = [];
  for (const stage of STAGES) {
    const t0 = process.cpuUsage();
    const next = stage.run(w, r);
    const used = process.cpuUsage(t0);
    times.push((used.user + used.system) / 1000);
    if (next === 'stop') throw new Error(`bug: stage ${stage.name} stopped the bench config`);
  }
  return times;
}

timedRun();
const runs = Array.from({ length: 5 }, timedRun);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
let total = 0;
console.log(`${routes} routes, ${format}: CPU ms per stage (median of 5)`);
STAGES.forEach((stage, i) => {
  const ms = median(runs.map((run) => run[i]!));
  total += ms;
  console.log(`${String(stage.n).padStart(2)} ${stage.name.padEnd(12)} ${ms.toFixed(1).padStart(8)}`);
});
console.log(`   ${'total'.padEnd(12)} ${total.toFixed(1).padStart(8)}`);
