/**
 * bench/compile: compile time and plan size for generated configs of 100, 1,000 and 10,000 routes
 * (mixed hosts, exact paths, prefixes, regexes, policies in both surfaces, legacy allow-lists).
 * Each config is compiled as YAML and as JSON: the two formats are read by different readers (YAML
 * by a js-yaml fast path, with the `yaml` library behind it). Prints a table and the
 * growth per route between sizes (n log n would be ~1.15x per 10x on top of linear). Run:
 * `npm run bench:compile` (`--sizes 100,1000` and `--formats yaml` choose what runs).
 */
import { performance } from 'node:perf_hooks';
import { parse } from 'yaml';
import { compile } from '../../compiler/compile.ts';
import { prettyJson } from '../../compiler/plan/canonical-json.ts';
import { generateConfig } from './generate.ts';


function compileText(text: string, file: string) {
  return compile({ configPath: file, env: {}, readFile: () => ({ ok: true, data: Buffer.from(text) }) });
}

/** The same config as YAML and as JSON: parsing is a large share, and the formats parse at different speeds. */
const FORMATS = {
  yaml: { file: 'bench.yaml', text: (n: number) => generateConfig(n) },
  json: { file: 'bench.json', text: (n: number) => JSON.stringify(parse(generateConfig(n)), null, 1) },
} as const;

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const sizes = (arg('--sizes') ?? '100,1000,10000').split(',').map(Number);
const formats = (arg('--formats') ?? 'yaml,json').split(',') as (keyof typeof FORMATS)[];
compileText(generateConfig(50), 'warmup.yaml'); // warm up: module loading, ajv compilation, JIT

console.log('format    routes    config bytes    compile ms    ms/route    plan bytes    growth per route vs previous');
for (const format of formats) {
  const { file, text: make } = FORMATS[format];
  let prev: { n: number; ms: number } | undefined;
  for (const n of sizes) {
    const text = make(n);
    let result = compileText(text, file);
    const times: number[] = [];
    for (let k = 0; k < 3; k++) {
      const t0 = performance.now();
      result = compileText(text, file);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    const ms = times[1]!; // the median of three
    const errors = result.diagnostics.filter((d) => d.severity === 'error');
    if (errors.length > 0) console.error(`${format} n=${n}: ${errors.length} errors, first: ${errors[0]!.code} ${errors[0]!.message}`);
    const bytes = result.plan ? Buffer.byteLength(prettyJson(result.plan)) : 0;
    const growth = prev ? `${(ms / n / (prev.ms / prev.n)).toFixed(2)}x` : '-';
    console.log(`${format.padEnd(6)}    ${String(n).padStart(6)}    ${String(text.length).padStart(12)}    ${ms.toFixed(1).padStart(10)}    ${(ms / n).toFixed(3).padStart(8)}    ${String(bytes).padStart(10)}    ${growth}`);
    // 10,000 routes from YAML under 1 s and from JSON under 0.5 s: `svc compile --check` instant in CI, reloads quick.
    const target = format === 'yaml' ? 1000 : 500;
    if (n === 10000) console.log(`${format}: target 10,000 routes under ${target} ms: ${ms < target ? 'met' : 'NOT met'} (${ms.toFixed(0)} ms; bench/compile/stages.ts shows where it goes)`);
    prev = { n, ms };
  }
}
