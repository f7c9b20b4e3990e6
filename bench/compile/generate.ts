/**
 * The generated configs of bench/compile: `n` routes over n/10 hosts, deterministic, mixing exact
 * paths, prefixes, regexes, both policy surfaces and legacy allow-lists.
 */
import { stringify } from 'yaml';
import { BASE_SETTINGS } from '../../test/support/compile-text.ts';

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
    ...BASE_SETTINGS,
    idp_service_account: 'bench-account',
    routes,
  });
}
