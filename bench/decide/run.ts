/**
 * bench/decide: decisions per second of the decision core (canonical request, host table, path
 * matcher, policy program, upstream request with header edits) on one core, identity given, with
 * 10, 1,000 and 10,000 routes spread over hosts of 10 routes each. The server's path is measured:
 * `decide(…, { reasons: false })`. Prints each size and its ratio to the 10-route plan (the target:
 * ≥ 1,000,000 decisions/s at 10 routes, no more than 10% slower at 10,000). Run:
 * `npm run bench:decide` (`--sizes 10,1000`, `--seconds 2`).
 */
import { performance } from 'node:perf_hooks';
import { compile } from '../../compiler/compile.ts';
import { decide } from '../../runtime/request/decide.ts';
import type { DecisionRequest, Identity } from '../../runtime/core/types.ts';
import { buildIndex } from '../../runtime/plan/index.ts';
import { BASE_SETTINGS } from '../../test/support/compile-text.ts';


/** A JSON config of `n` routes, 10 per host: exact paths, prefixes, a regex, one public route. */
function config(n: number): string {
  const routes: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const host = `app${Math.floor(i / 10)}.bench.example.com`;
    const r: Record<string, unknown> = { from: `https://${host}`, to: `http://10.0.${i % 250}.${(i * 7) % 250}:8080` };
    switch (i % 10) {
      case 9:
        r['prefix'] = '/';
        r['policy'] = 'allow if domain is "example.com" or groups has "admins"\ndeny if http_method is "DELETE" and not groups has "ops"';
        r['pass_identity_headers'] = true;
        break;
      case 8:
        r['regex'] = `/items/${i}/[0-9]+`;
        r['allow_any_authenticated_user'] = true;
        break;
      case 7:
        r['prefix'] = `/static/${i}/`;
        r['allow_public_unauthenticated_access'] = true;
        break;
      default:
        r['prefix'] = `/api/v${i}/`;
        r['policy'] = `allow if domain is "example.com" and http_method in ["GET", "HEAD"]`;
    }
    routes.push(r);
  }
  return JSON.stringify({
    ...BASE_SETTINGS,
    jwt_claims_headers: ['email', 'groups'],
    routes,
  });
}

const identity: Identity = { user: 'u-1234', email: 'alice@example.com', groups: ['staff', 'admins'], claims: { name: 'Alice' } };

/** Requests over the plan's hosts: the catch-all route of each host, a browser's usual headers. */
function requests(n: number): DecisionRequest[] {
  const hosts = Math.max(1, Math.floor(n / 10));
  const out: DecisionRequest[] = [];
  for (let k = 0; k < 64; k++) {
    const host = `app${(k * 7919) % hosts}.bench.example.com`;
    out.push({
      method: 'GET',
      target: `/dashboard/${k}?tab=overview`,
      scheme: 'https',
      headers: {
        host: [host],
        accept: ['text/html,application/xhtml+xml'],
        'accept-encoding': ['gzip, br'],
        'accept-language': ['en-US,en;q=0.9'],
        'user-agent': ['Mozilla/5.0 (X11; Linux x86_64) bench'],
        cookie: ['_svc=abcdefghijklmnopqrstuvwxyz0123456789'],
      },
      peer: '192.0.2.44',
      nowMs: 1_700_000_000_000,
    });
  }
  return out;
}

function measure(n: number, seconds: number): { rate: number; allowed: number } {
  const res = compile({ configPath: 'bench.json', env: {}, readFile: () => ({ ok: true, data: Buffer.from(config(n)) }) });
  if (!res.plan) throw new Error(`bench config does not compile: ${res.diagnostics.find((d) => d.severity === 'error')?.message}`);
  const index = buildIndex(res.plan.body);
  const reqs = requests(n);
  let allowed = 0;
  for (let i = 0; i < 200_000; i++) decide(index, reqs[i & 63]!, identity, { reasons: false }); // warm-up
  let count = 0;
  const end = performance.now() + seconds * 1000;
  const t0 = performance.now();
  while (performance.now() < end) {
    for (let i = 0; i < 10_000; i++) if (decide(index, reqs[i & 63]!, identity, { reasons: false }).outcome === 'allow') allowed++;
    count += 10_000;
  }
  return { rate: count / ((performance.now() - t0) / 1000), allowed: allowed / count };
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
}

const sizes = (arg('--sizes') ?? '10,1000,10000').split(',').map(Number);
const seconds = Number(arg('--seconds') ?? '3');
console.log(`decide: ${seconds}s per size, one core, identity given, node ${process.version}`);
let base: number | undefined;
for (const n of sizes) {
  const { rate, allowed } = measure(n, seconds);
  base ??= rate;
  console.log(`${String(n).padStart(6)} routes: ${Math.round(rate).toLocaleString('en-US').padStart(10)} decisions/s  (${(rate / base).toFixed(2)}x of ${sizes[0]} routes; ${(allowed * 100).toFixed(0)}% allowed)`);
}
