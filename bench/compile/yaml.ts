/**
 * The YAML readers on the generated configs of bench/compile: CPU ms of `parseYaml` (the js-yaml
 * fast path, which reads these configs) and of the `yaml`-library reader behind it, median of
 * five runs after a warmup, interleaved so that load on the machine hits both alike. Checks that
 * the fast path read each config and that both trees are equal. Run:
 * `npx tsx bench/compile/yaml.ts [--sizes 100,1000,10000]`.
 */
import { isDeepStrictEqual } from 'node:util';
import { Reporter } from '../../compiler/diagnostics/diagnostic.ts';
import { sourceFile } from '../../compiler/source/source-file.ts';
import { parseYamlWithLibrary } from '../../compiler/sources/yaml.ts';
import { readYamlFast } from '../../compiler/sources/yaml-fast.ts';
import { generateConfig } from './generate.ts';

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const sizes = (arg('--sizes') ?? '100,1000,10000').split(',').map(Number);

function cpuMs(f: () => unknown): number {
  const t0 = process.cpuUsage();
  f();
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / 1000;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

console.log('routes    config bytes    fast path ms    library ms    speed-up');
for (const n of sizes) {
  const source = sourceFile('bench.yaml', generateConfig(n));
  const fast = readYamlFast(source);
  if (fast === undefined) throw new Error(`bug: the fast path declined the ${n}-route config`);
  if (!isDeepStrictEqual(fast, parseYamlWithLibrary(source, new Reporter()))) throw new Error(`bug: the readers disagree on the ${n}-route config`);
  const fastMs: number[] = [];
  const libraryMs: number[] = [];
  for (let k = 0; k < 5; k++) {
    fastMs.push(cpuMs(() => readYamlFast(source)));
    libraryMs.push(cpuMs(() => parseYamlWithLibrary(source, new Reporter())));
  }
  const f = median(fastMs);
  const l = median(libraryMs);
  console.log(`${String(n).padStart(6)}    ${String(source.text.length).padStart(12)}    ${f.toFixed(1).padStart(12)}    ${l.toFixed(1).padStart(10)}    ${(l / f).toFixed(1).padStart(7)}x`);
}
