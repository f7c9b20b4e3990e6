/**
 * Reviewer flags: changes that weaken security or change what upstreams see, raised whether or not
 * the access delta shows them (a reviewer must see each one).
 */
import type { Expr, PlanSettings, PolicyIR, Route } from '../../compiler/plan/types.ts';
import { printRule, routeCovers } from '../../compiler/index.ts';
import { compareAccess, describeClassChange, pathOf } from './access.ts';
import { listenerOf, policyChange, routeRef, type RoutePairing } from './routes.ts';
import { settingFlags } from './setting-flags.ts';
import type { Verdict } from '../../runtime/core/types.ts';
import type { Flag, RouteAccess } from './types.ts';

const ACCEPT: Expr = { op: 'criterion', name: 'accept' };

/** The policy keeping only the deny rules, allowing everything else: "deny" means a deny rule holds. */
function denyOnly(p: PolicyIR): PolicyIR {
  return { rules: [...p.rules.filter((r) => r.action === 'deny'), { action: 'allow', when: ACCEPT }] };
}

/** Under `denyOnly`, a class "gains" when a deny rule held before and none holds now. */
const notDenied = (v: Verdict): boolean => v !== 'deny';

/** True for an allow rule that holds for every request: `allow if accept`, or `accept` in a top-level `or`. */
function allowsEverything(e: Expr): boolean {
  if (e.op === 'criterion') return e.name === 'accept';
  return e.op === 'or' && e.args.some(allowsEverything);
}

function acceptRules(p: PolicyIR): string[] {
  return p.rules.filter((r) => r.action === 'allow' && allowsEverything(r.when)).map(printRule);
}

function describedChange(access: RouteAccess | undefined, pick: 'gains' | 'loses', identity: string): string | undefined {
  const c = access?.[pick].find((x) => x.identity === identity);
  return c && describeClassChange(c);
}

/**
 * Finds, for a route, the earliest route before it on the same listener that matches every path it
 * matches (`path_case` included). Routes are grouped by listener once, so the cost grows with the routes sharing a host.
 */
function shadowFinder(routes: readonly Route[]): (r: Route) => Route | undefined {
  const byListener = new Map<string, Route[]>();
  for (const r of routes) {
    const list = byListener.get(listenerOf(r));
    if (list) list.push(r);
    else byListener.set(listenerOf(r), [r]);
  }
  return (r) => byListener.get(listenerOf(r))?.find((e) => e.index < r.index && routeCovers(e, r));
}

/**
 * Lists the flags, route by route in new-plan order (removed routes raise none), then settings:
 *
 * - `public`: a route became public (`public` false → true, or added public), or its policy now
 *   allows anonymous requests (from the access delta);
 * - `fail-open`: a newly added `allow if accept` rule, or deny rules that no longer deny some class
 *   (evaluated like the access delta on the deny rules alone), or fewer deny rules;
 * - `shadowed`: an earlier route on the same listener covers every path of the route (the
 *   `route-shadowed` rule's sound check), when that was not already so in the old plan;
 * - `tls-skip-verify`: upstream certificate verification turned off (routes, and the databroker's
 *   Redis connection);
 * - `pass-identity-headers`: turned on or off;
 * - then the settings flags `sign-out`, `shared-secret` and `signing-key` (setting-flags.ts).
 */
export function reviewFlags(
  pairing: RoutePairing,
  access: readonly RouteAccess[],
  oldPlan: { readonly settings: PlanSettings; readonly routes: readonly Route[] },
  newPlan: { readonly settings: PlanSettings; readonly routes: readonly Route[] },
): Flag[] {
  const flags: Flag[] = [];
  const oldOf = new Map(pairing.pairs.map((p) => [p.new, p.old] as const));
  const shadowInNew = shadowFinder(newPlan.routes);
  const shadowInOld = shadowFinder(oldPlan.routes);
  const accessOf = new Map(access.filter((a) => a.status !== 'removed').map((a) => [a.route.index, a] as const));
  for (const r of newPlan.routes) {
    const old = oldOf.get(r);
    const isAdded = !oldOf.has(r);
    const ref = routeRef(r);
    const flag = (kind: Flag['kind'], message: string) => flags.push({ kind, route: ref, message });
    const acc = accessOf.get(r.index);

    // public
    if (r.public && (isAdded || (old && !old.public))) {
      flag('public', isAdded ? 'added as a public route: no sign-in, no policy' : 'became public (allow_public_unauthenticated_access turned on): no sign-in, no policy');
    } else {
      const anon = describedChange(acc, 'gains', 'anonymous');
      if (anon !== undefined) flag('public', `policy now allows anonymous requests: ${anon}`);
    }

    // fail-open
    if (!r.public) {
      const before = new Set(old && !old.public ? acceptRules(old.policy) : []);
      for (const rule of acceptRules(r.policy)) if (!before.has(rule)) flag('fail-open', `policy rule \`${rule}\` allows every request`);
    }
    if (old && !old.public && !r.public && policyChange(old, r)) {
      const d = compareAccess({ policy: denyOnly(old.policy), public: false }, { policy: denyOnly(r.policy), public: false }, {
        granted: notDenied,
        classesFrom: [old.policy, r.policy],
        path: pathOf(r),
      });
      const oldDenies = old.policy.rules.filter((x) => x.action === 'deny').length;
      const newDenies = r.policy.rules.filter((x) => x.action === 'deny').length;
      if (d.gains.length) flag('fail-open', `deny rules became weaker: no longer denied: ${d.gains.map(describeClassChange).join(', ')}`);
      else if (newDenies < oldDenies) flag('fail-open', `deny rules removed (${oldDenies} → ${newDenies})`);
    }

    // shadowed
    const by = shadowInNew(r);
    if (by && !(old && shadowInOld(old))) {
      flag('shadowed', `shadowed by ${routeRef(by).label} (#${by.index}): an earlier route on the same host matches every path this one matches, so it is never used`);
    }

    // tls-skip-verify
    if (r.tls.skipVerify && (isAdded || (old && !old.tls.skipVerify))) flag('tls-skip-verify', 'tls_skip_verify turned on: upstream certificates are not verified');

    // pass-identity-headers
    if (old && old.passIdentityHeaders !== r.passIdentityHeaders) {
      flag(
        'pass-identity-headers',
        r.passIdentityHeaders
          ? 'pass_identity_headers turned on: the upstream now receives the signed identity assertion and claim headers'
          : 'pass_identity_headers turned off: the upstream no longer receives identity headers (check it does not rely on them)',
      );
    }
  }
  if (newPlan.settings.databroker.storage.tlsSkipVerify && !oldPlan.settings.databroker.storage.tlsSkipVerify) {
    flags.push({ kind: 'tls-skip-verify', route: null, message: 'databroker_storage_tls_skip_verify turned on: the Redis certificate is not verified' });
  }
  flags.push(...settingFlags(oldPlan.settings, newPlan.settings));
  return flags;
}
