import type { PlanBody } from './types.ts';

/**
 * Stage 9: cross-reference checks on the emitted plan (the Envoy habit: a snapshot is checked
 * before it is served). A problem here is a compiler bug, never a user mistake.
 */
export function checkConsistency(body: PlanBody): string[] {
  const problems: string[] = [];
  const ids = new Set<string>();
  body.routes.forEach((r, i) => {
    if (ids.has(r.id)) problems.push(`route id \`${r.id}\` is not unique`);
    ids.add(r.id);
    if (i > 0 && r.index <= body.routes[i - 1]!.index) problems.push(`route ${r.index} is out of order`);
    if (r.action.kind === 'forward' && r.action.upstreams.length === 0) problems.push(`route ${r.index} forwards to no upstream`);
    if (r.from.scheme === 'tcp+https' && r.action.kind === 'forward' && r.action.upstreams.some((u) => u.scheme !== 'tcp'))
      problems.push(`tcp route ${r.index} has a non-tcp upstream`);
  });
  if (body.settings.mode.allInOne !== (body.settings.mode.services === 'all')) problems.push('mode.allInOne disagrees with mode.services');
  return problems;
}
