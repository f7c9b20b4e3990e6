import { q } from '../../diagnostics/define.ts';
import { RouteWeights } from '../../diagnostics/codes/routes.ts';
import { splitWeight } from '../../ir/lower-routes.ts';
import type { RouteInput, ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';
import { toEntriesOf, toEntryPath, type ToEntry } from './helpers.ts';

interface Entry {
  readonly url: string;
  readonly weight: string | undefined;
  readonly entry: ToEntry;
}

function entriesOf(route: RouteInput): Entry[] {
  return toEntriesOf(route).map((entry) => ({ ...splitWeight(entry.text), entry }));
}

/**
 * `route-weights`: `to` weights (`URL,<weight>`) are given for every URL or for none, and each is a
 * positive integer (docs/architecture.md §3). Lowering treats a missing or bad weight as 1; this rule reports
 * it: each bad weight at its entry, and a mix of weighted and unweighted URLs once, at the first
 * unweighted entry.
 */
export const routeWeights: ValidationRule = {
  reports: [RouteWeights],
  check(input, r) {
    for (const route of input.routes) {
      const entries = entriesOf(route);
      for (const e of entries) {
        if (e.weight === undefined) continue;
        let problem: string | undefined;
        if (e.weight === '') problem = `${q(e.url)} has an empty weight`;
        else if (!/^\d+$/.test(e.weight)) problem = `weight ${q(e.weight)} of ${q(e.url)} is not a whole number`;
        else if (Number(e.weight) === 0) problem = `weight \`0\` of ${q(e.url)} would send it no traffic`;
        if (problem !== undefined) {
          const path = toEntryPath(route, e.entry);
          r.report(RouteWeights, spanOf(input, path), { problem }, path);
        }
      }
      const weighted = entries.filter((e) => e.weight !== undefined).length;
      if (weighted > 0 && weighted < entries.length) {
        const first = entries.find((e) => e.weight === undefined)!;
        const path = toEntryPath(route, first.entry);
        r.report(RouteWeights, spanOf(input, path), { problem: `${q(first.url)} has no weight but other URLs of the route do` }, path);
      }
    }
  },
};
