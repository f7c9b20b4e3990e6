/**
 * `svc diff OLD NEW --replay LOG...`: every request an access log recorded, decided again under
 * both plans (replay-request.ts), counted and grouped by how its answer changes, by route and
 * reason (types.ts). Files are streamed one line at a time (log-lines.ts): the report keeps counts
 * and at most {@link MAX_EXAMPLES} example lines per group, so memory does not grow with the log.
 */
import { SvcError } from '../../../runtime/core/errors.ts';
import type { PlanEnvelope, Route } from '../../../compiler/plan/types.ts';
import type { Identity } from '../../../runtime/core/types.ts';
import { pairRoutes, routeRef } from '../routes.ts';
import type { RouteRef } from '../types.ts';
import { readAccessRecord, type AccessRecord } from './access-record.ts';
import { lineStats, readLogLines } from './log-lines.ts';
import { missing, recordedIdentity, replayPlan, replayUnder, upstreamsOf, type ReplayPlan, type Replayed } from './replay-request.ts';
import { MAX_EXAMPLES, type ReplayChangeKind, type ReplayFile, type ReplayGap, type ReplayGroup, type ReplayReport } from './types.ts';

/** A log file `svc diff --replay` could not read. */
export class ReplayReadError extends SvcError<'SVC_ERR_REPLAY_READ'> {
  constructor(path: string, cause: unknown) {
    super('SVC_ERR_REPLAY_READ', `cannot read \`${path}\`: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'ReplayReadError';
  }
}

/** Where replay is, for a progress indicator: told every {@link PROGRESS_EVERY} lines and at each file's end. */
export interface ReplayProgress {
  readonly file: string;
  readonly lines: number;
  readonly requests: number;
  readonly changed: number;
}

export const PROGRESS_EVERY = 50_000;

/** The decisions a line records that are decisions svc's core makes (the rest were refused before it). */
const DECIDED = new Set(['allow', 'redirect', 'deny', 'unauthenticated', 'not_found', 'bad_request', 'internal', 'unavailable', 'client-certificate-required']);
/** Recorded decisions OLD's replay is compared with (`unavailable` is an outage, not a decision of the plan). */
const COMPARABLE = new Set(['allow', 'redirect', 'deny', 'unauthenticated', 'not_found', 'bad_request', 'internal', 'client-certificate-required']);
const ALLOWED = new Set(['allow', 'redirect']);
/**
 * The reason of a 503 answered while the session store was unreachable (runtime/authn/admit.ts
 * `SESSION_STORE_UNAVAILABLE`, kept equal by the replay test; not imported, which would load the
 * whole authentication service into `svc diff`).
 */
export const SESSION_STORE_UNAVAILABLE = 'session-store-unavailable';

const KIND_ORDER: readonly ReplayChangeKind[] = ['allowed-to-denied', 'denied-to-allowed', 'outcome-changed', 'route-changed', 'upstream-changed'];

interface Tally {
  count: number;
  readonly examples: string[];
}

function note(t: Tally, where: string): void {
  t.count++;
  if (t.examples.length < MAX_EXAMPLES) t.examples.push(where);
}

/** How the answer changes from `a` (OLD) to `b` (NEW), or null when it does not. */
function changeOf(a: Replayed, b: Replayed, counterpart: ReadonlyMap<Route, Route>): ReplayChangeKind | null {
  const was = ALLOWED.has(a.outcome);
  const is = ALLOWED.has(b.outcome);
  if (was && !is) return 'allowed-to-denied';
  if (!was && is) return 'denied-to-allowed';
  if (a.outcome !== b.outcome) return 'outcome-changed';
  const sameRoute = a.route === null ? b.route === null : b.route !== null && counterpart.get(a.route) === b.route;
  if (!sameRoute) return 'route-changed';
  if (a.outcome === 'allow' && upstreamsOf(a.route) !== upstreamsOf(b.route)) return 'upstream-changed';
  return null;
}

/**
 * Whether OLD's replay decides a line as svc recorded it: the same outcome, from the route the line
 * names (its `name`, else its index). True for a recorded outcome that is not the plan's doing (`unavailable`).
 */
function sameAsRecorded(r: AccessRecord, old: Replayed): boolean {
  if (!COMPARABLE.has(r.decision)) return true;
  const route = old.route === null ? undefined : (old.route.name ?? old.route.index);
  return r.decision === old.outcome && r.route === route;
}

/**
 * Replays `paths` (in the order given: rotated files may come in any order) under `oldPlan` and
 * `newPlan`. Throws {@link ReplayReadError} for a file it cannot read.
 */
export async function replayLogs(paths: readonly string[], oldPlan: PlanEnvelope, newPlan: PlanEnvelope, progress?: (p: ReplayProgress) => void): Promise<ReplayReport> {
  const olds = replayPlan(oldPlan);
  const news = replayPlan(newPlan);
  const pairing = pairRoutes(oldPlan.body.routes, newPlan.body.routes);
  const counterpart = new Map(pairing.pairs.map((p) => [p.old, p.new] as const));
  const refOf = new Map<Route, RouteRef>();
  const ref = (r: Route | null): RouteRef | null => {
    if (r === null) return null;
    let x = refOf.get(r);
    if (!x) refOf.set(r, (x = routeRef(r)));
    return x;
  };

  const files: ReplayFile[] = [];
  const skipped = { other: 0, junk: 0, overlong: 0 };
  let lines = 0;
  let requests = 0;
  let replayed = 0;
  let unchanged = 0;
  let changed = 0;
  const groups = new Map<string, { group: Omit<ReplayGroup, 'count' | 'examples'>; tally: Tally }>();
  const gaps = new Map<string, Tally>();
  const oldDiffers: Tally = { count: 0, examples: [] };
  const gap = (reason: string, where: string) => {
    let t = gaps.get(reason);
    if (!t) gaps.set(reason, (t = { count: 0, examples: [] }));
    note(t, where);
  };

  for (const path of paths) {
    const stats = lineStats();
    try {
      for await (const { text, line } of readLogLines(path, stats)) {
        lines++;
        if (progress && lines % PROGRESS_EVERY === 0) progress({ file: path, lines, requests, changed });
        if (text.length === 0) continue;
        const read = readAccessRecord(text);
        const where = `${path}:${line}`;
        if (read.kind === 'cut') {
          requests++;
          gap('line-cut', where);
          continue;
        }
        if (read.kind !== 'access') {
          skipped[read.kind]++;
          continue;
        }
        const r = read.record;
        if (r.event === 'close') continue;
        requests++;
        if (r.decision === 'none') {
          gap('undecided', where);
          continue;
        }
        if (!DECIDED.has(r.decision)) {
          gap('refused-at-door', where);
          continue;
        }
        if (r.decision === 'unavailable' && r.reasons.includes(SESSION_STORE_UNAVAILABLE)) {
          // Who it was is unknown (the store did not answer): never replayed as anonymous.
          gap('session-store-unavailable', where);
          continue;
        }
        const identity: Identity | null = recordedIdentity(r);
        let a = replayUnder(r, olds, identity, false);
        let b = replayUnder(r, news, identity, false);
        const lacks = missing(r, identity, { p: olds, route: a.route }, { p: news, route: b.route });
        if (lacks.length > 0) {
          for (const reason of lacks) gap(reason, where);
          continue;
        }
        replayed++;
        if (!sameAsRecorded(r, a)) note(oldDiffers, where);
        const kind = changeOf(a, b, counterpart);
        if (kind === null) {
          unchanged++;
          continue;
        }
        changed++;
        // The reasons an allowed request was allowed, for its group: asked for only now.
        a = replayUnder(r, olds, identity);
        b = replayUnder(r, news, identity);
        const reasons = ALLOWED.has(b.outcome) && !ALLOWED.has(a.outcome) ? a.reasons : b.reasons;
        const key = JSON.stringify([kind, a.route?.index ?? null, b.route?.index ?? null, a.outcome, b.outcome, reasons]);
        let g = groups.get(key);
        if (!g) groups.set(key, (g = { group: { change: kind, old: ref(a.route), new: ref(b.route), from: a.outcome, to: b.outcome, reasons: [...reasons] }, tally: { count: 0, examples: [] } }));
        note(g.tally, where);
      }
    } catch (e) {
      throw new ReplayReadError(path, e);
    }
    skipped.overlong += stats.overlong;
    files.push({ path, gzip: stats.gzip, lines: stats.lines + stats.overlong, truncated: stats.truncated });
    progress?.({ file: path, lines, requests, changed });
  }

  const changes = [...groups.values()]
    .map(({ group, tally }): ReplayGroup => ({ ...group, count: tally.count, examples: tally.examples }))
    .sort((x, y) => KIND_ORDER.indexOf(x.change) - KIND_ORDER.indexOf(y.change) || y.count - x.count || (x.new?.index ?? -1) - (y.new?.index ?? -1) || (x.old?.index ?? -1) - (y.old?.index ?? -1) || x.reasons.join().localeCompare(y.reasons.join()));
  const notReplayable: ReplayGap[] = [...gaps.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([reason, t]) => ({ reason, count: t.count, examples: t.examples }));
  return { files, lines, skipped, requests, replayed, unchanged, changed, changes, notReplayable, oldDiffers: { reason: 'old-plan-differs', count: oldDiffers.count, examples: oldDiffers.examples } };
}

export type { ReplayPlan };
