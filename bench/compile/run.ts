/**
 * bench/compile: compile time and plan size for generated configs of 100, 1,000 and 10,000 routes
 * (mixed hosts, exact paths, prefixes, regexes, policies in both surfaces, legacy allow-lists).
 * Prints a table and the growth per route between sizes (n log n would be ~1.15x per 10x on top of
 * linear). Run: `npm run bench:compile` (add `--sizes 100,1000` to choose sizes).
 */
import { performance } from 'node:perf_hooks';
import { stringify } from 'yaml';
import { compile } from '../../compiler/compile.ts';
import { prettyJson } from '../../compiler/plan/canonical-json.ts';

const SECRET = Buffer.alloc(32, 7).toString('base64');

/** A config with `n` routes over n/10 hosts, deterministic. */
export function generateConfig(n: number): string {
  const routes: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const host = `app${Math.floor(i / 10)}.bench.example.com`;
    const r: Record<string, unknown> = { from: `https://${host}`, to: [`http://10.0.${i % 250}.${(i * 7) % 250}:8080`] };
    switch (i % 5) {
      case 0:
        r['path'] = `/exact/${i}`;
        r['policy'] = [{ allow: { or: [{ email: { is: `user${i}@example.com` } }, { groups: { has: `team-${i % 17}` } }] } }];
        break;
      case 1:
        r['prefix'] = `/api/v${i}/`;
        r['policy'] = `allow if domain is "example.com" and http_method in ["GET", "HEAD"]\ndeny if groups has "blocked-${i % 13}"`;
        break;
      case 2:
        r['regex'] = `^/items/${i}/[0-9]+$`;
        r['allowed_domains'] = ['example.com', `corp${i % 5}.example.com`];
        break;
      case 3:
        r['prefix'] = `/static/${i}/`;
        r['allow_public_unauthenticated_access'] = true;
        r['set_response_headers'] = { 'Cache-Control': 'public, max-age=60' };
        break;
      default:
        r['prefix'] = `/svc/${i}/`;
        r['prefix_rewrite'] = '/';
        r['allow_any_authenticated_user'] = true;
        r['timeout'] = '10s';
    }
    routes.push(r);
  }
  return stringify({
    insecure_server: true,
    shared_secret: SECRET,
    cookie_secret: SECRET,
    authenticate_service_url: 'https://auth.bench.example.com',
    signout_redirect_url: 'https://bench.example.com/',
    idp_provider: 'oidc',
    idp_provider_url: 'https://idp.bench.example.com',
    idp_client_id: 'bench',
    idp_client_secret: 'bench-secret',
    idp_service_account: 'bench-account',
    routes,
  });
}

function compileText(text: string) {
  return compile({ configPath: 'bench.yaml', env: {}, readFile: () => ({ ok: true, data: Buffer.from(text) }) });
}

const sizesArg = process.argv.indexOf('--sizes');
const sizes = sizesArg > 0 ? process.argv[sizesArg + 1]!.split(',').map(Number) : [100, 1000, 10000];
compileText(generateConfig(50)); // warm up: module loading, ajv compilation, JIT
const rows: { n: number; ms: number; bytes: number; errors: number }[] = [];
for (const n of sizes) {
  const text = generateConfig(n);
  const times: number[] = [];
  let result = compileText(text);
  for (let k = 0; k < 3; k++) {
    const t0 = performance.now();
    result = compileText(text);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const errors = result.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) console.error(`n=${n}: ${errors.length} errors, first: ${errors[0]!.code} ${errors[0]!.message}`);
  rows.push({ n, ms: times[1]!, bytes: result.plan ? Buffer.byteLength(prettyJson(result.plan)) : 0, errors: errors.length });
}
console.log('routes    compile ms    ms/route    plan bytes    growth per route vs previous');
rows.forEach((r, i) => {
  const prev = rows[i - 1];
  const growth = prev ? `${(r.ms / r.n / (prev.ms / prev.n)).toFixed(2)}x` : '-';
  console.log(`${String(r.n).padStart(6)}    ${r.ms.toFixed(1).padStart(10)}    ${(r.ms / r.n).toFixed(3).padStart(8)}    ${String(r.bytes).padStart(10)}    ${growth}`);
});
const big = rows.find((r) => r.n === 10000);
if (big) console.log(`target: 10,000 routes under 2000 ms: ${big.ms < 2000 ? 'met' : 'NOT met'} (${big.ms.toFixed(0)} ms)`);
