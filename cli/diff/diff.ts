/**
 * `diffPlans`: the pure entry point of `svc diff`. Same two plans in, same diff out (no clock, no
 * I/O); the renderers (render-text.ts, render-json.ts) print it.
 */
import type { PlanEnvelope } from '../../compiler/plan/types.ts';
import { routeAccess } from './access.ts';
import { reviewFlags } from './flags.ts';
import { diffRoutes, pairRoutes } from './routes.ts';
import { diffSettings } from './settings.ts';
import type { PlanDiff } from './types.ts';

/**
 * Compares two plans. Equal checksums mean equal bodies: the diff is then `equal` with every list
 * empty. Otherwise it lists access changes, reviewer flags, route changes and settings changes
 * (see types.ts). Never includes a secret's value (values.ts).
 */
export function diffPlans(oldPlan: PlanEnvelope, newPlan: PlanEnvelope): PlanDiff {
  const head = { old: { checksum: oldPlan.checksum }, new: { checksum: newPlan.checksum } };
  if (oldPlan.checksum === newPlan.checksum) {
    return { ...head, equal: true, access: [], flags: [], routes: { added: [], removed: [], changed: [], unchanged: newPlan.body.routes.length }, settings: [] };
  }
  const pairing = pairRoutes(oldPlan.body.routes, newPlan.body.routes);
  const access = routeAccess(pairing);
  return {
    ...head,
    equal: false,
    access,
    flags: reviewFlags(pairing, access, oldPlan.body, newPlan.body),
    routes: diffRoutes(pairing),
    settings: diffSettings(oldPlan.body.settings, newPlan.body.settings),
  };
}
