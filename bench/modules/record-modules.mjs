// Records every module a process loads, for bench/modules/run.ts and the footprint test
// (test/runtime/process/footprint.test.ts). Given to node with `--import` (a cluster worker inherits
// it through execArgv), it registers an in-thread module hook (`module.registerHooks`) that sees
// every `import` and `require`: each module's URL as it is loaded, and the module that first asked
// for it (its importer, for the "why" chain). Plain JavaScript, so that it loads before any
// TypeScript loader.
//
// On SIGUSR2 the process writes what it has loaded so far, with its memory figures after a garbage
// collection when node runs with `--expose-gc`, to `$SVC_MODULES_DIR/<pid>.json`:
// `{ pid, worker, rss, heapUsed, heapTotal, external, modules: [[url, importer], …] }` in load order.
// Nothing is written without SVC_MODULES_DIR.
import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** url → the URL of the module that first imported it (undefined for the entry). */
const importers = new Map();
/** The URLs loaded, in order. */
const loaded = [];
const seen = new Set();

registerHooks({
  resolve(specifier, context, nextResolve) {
    const r = nextResolve(specifier, context);
    if (!importers.has(r.url)) importers.set(r.url, context.parentURL);
    return r;
  },
  load(url, context, nextLoad) {
    if (!seen.has(url)) {
      seen.add(url);
      loaded.push(url);
    }
    return nextLoad(url, context);
  },
});

const dir = process.env.SVC_MODULES_DIR;
if (dir !== undefined && dir !== '') {
  process.on('SIGUSR2', () => {
    globalThis.gc?.();
    const m = process.memoryUsage();
    const report = {
      pid: process.pid,
      worker: process.env.SVC_CLUSTER_WORKER === '1',
      rss: m.rss,
      heapUsed: m.heapUsed,
      heapTotal: m.heapTotal,
      external: m.external,
      modules: loaded.map((url) => [url, importers.get(url) ?? null]),
    };
    writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify(report));
  });
}
