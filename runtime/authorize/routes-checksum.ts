/**
 * The routes checksum: what a proxy and an authorize service compare to tell whether they run the
 * same configuration (docs/distributed.md "Plans that differ"). It is `sha256:` of the routes'
 * digests (route-digest.ts) in plan order, one per line: the routes, their policies and their
 * order, the part of a plan the two roles must agree on for a verdict to mean the same on both.
 *
 * The plan checksum is not it: every role's plan differs in `services` (and may differ in other
 * role-local settings, such as its listen addresses), so two roles loading one file never have
 * the same plan checksum, while their routes are the same exactly when their route lists are.
 */
import { createHash } from 'node:crypto';
import type { PlanBody } from '../../compiler/plan/types.ts';
import { routeDigest } from './route-digest.ts';

/** A plan as the authorize client and service read it: its checksum and body. */
export interface PlanRef {
  readonly checksum: string;
  readonly body: PlanBody;
}

const sums = new WeakMap<PlanBody['routes'], string>();

/** The routes checksum of `body` (computed once per plan body: plans are frozen). */
export function routesChecksum(body: PlanBody): string {
  let sum = sums.get(body.routes);
  if (sum === undefined) {
    const hash = createHash('sha256');
    for (const route of body.routes) hash.update(`${routeDigest(route)}\n`);
    sum = `sha256:${hash.digest('hex')}`;
    sums.set(body.routes, sum);
  }
  return sum;
}
