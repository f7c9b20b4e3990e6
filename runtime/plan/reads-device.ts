/**
 * Whether a route's policy, or any route of a plan, reads the `device` criterion (docs/policy.md
 * "`device`"): what decides that a plan needs the device page and its WebAuthn library.
 */
import type { Expr, PlanBody, Route } from '../../compiler/plan/types.ts';

/** True when some rule of the route's policy has a `device` leaf. */
export function routeReadsDevice(route: Route): boolean {
  return route.policy.rules.some((rule) => exprReadsDevice(rule.when));
}

/** True when some route of the plan reads `device`. */
export function planReadsDevice(body: PlanBody): boolean {
  return body.routes.some(routeReadsDevice);
}

function exprReadsDevice(e: Expr): boolean {
  switch (e.op) {
    case 'and':
    case 'or':
      return e.args.some(exprReadsDevice);
    case 'not':
      return exprReadsDevice(e.arg);
    case 'criterion':
      return e.name === 'device';
  }
}
