/**
 * The shape of a replay report (`svc diff OLD NEW --replay LOG...`): recorded requests decided again
 * under both plans. Pure JSON data, the `replay` part of the diff JSON (cli/diff/render-json.ts),
 * documented in docs/diff.md "Replaying real traffic". No field holds more of a request than its
 * access line did (no query, no header value, no token); examples are `file:line` references.
 */
import type { RouteRef } from '../types.ts';

/** How a request's answer changes between the two plans, most serious first. */
export type ReplayChangeKind =
  /** Allowed (forwarded or redirected) under OLD, not under NEW. */
  | 'allowed-to-denied'
  /** Not allowed under OLD, allowed under NEW. */
  | 'denied-to-allowed'
  /** Not allowed under either, for another outcome (`unauthenticated` → `deny`, `deny` → `not_found`). */
  | 'outcome-changed'
  /** The same outcome, from a route that is not the old one's counterpart (a shadowing route, a move). */
  | 'route-changed'
  /** Forwarded by the same route, to another set of upstreams. */
  | 'upstream-changed';

/** Requests that change the same way, on the same routes, for the same reasons. */
export interface ReplayGroup {
  readonly change: ReplayChangeKind;
  /** The route under each plan; null when none matched. */
  readonly old: RouteRef | null;
  readonly new: RouteRef | null;
  /** The outcome under each plan (`allow`, `deny`, `unauthenticated`, `not_found`, …). */
  readonly from: string;
  readonly to: string;
  /** The reasons of the side that does not allow (NEW's when both allow). */
  readonly reasons: readonly string[];
  readonly count: number;
  /** Up to {@link MAX_EXAMPLES} lines, as `file:line`, in the order read. */
  readonly examples: readonly string[];
}

/** Requests counted but not decided again exactly, for one reason. */
export interface ReplayGap {
  readonly reason: string;
  readonly count: number;
  readonly examples: readonly string[];
}

/** One log file read. */
export interface ReplayFile {
  readonly path: string;
  readonly gzip: boolean;
  readonly lines: number;
  /** The gzip stream ended early (the file was cut): its last lines may be missing. */
  readonly truncated: boolean;
}

export interface ReplayReport {
  readonly files: readonly ReplayFile[];
  /** Lines read in all. */
  readonly lines: number;
  /** Lines that are not access lines: svc's other lines (`other`), not JSON or cut (`junk`), too long (`overlong`). */
  readonly skipped: { readonly other: number; readonly junk: number; readonly overlong: number };
  /** Access lines that are requests (a tunnel's or upgrade's `close` line repeats its `open`, and is not counted). */
  readonly requests: number;
  /** Requests decided again under both plans from what their line holds. */
  readonly replayed: number;
  /** Of those, the ones whose answer is the same under both plans. */
  readonly unchanged: number;
  /** Of those, the ones whose answer changes: `changes` groups them. */
  readonly changed: number;
  readonly changes: readonly ReplayGroup[];
  /**
   * Requests not decided again exactly (counted here, never in `changed` or `unchanged`): what their
   * line lacks (docs/diff.md), or `refused-at-door` / `undecided` (never reached a decision).
   */
  readonly notReplayable: readonly ReplayGap[];
  /**
   * Replayed requests whose recorded decision is not what OLD decides (the log was written under
   * another plan, or an outage answered them): still compared, and shown so a reviewer knows.
   */
  readonly oldDiffers: ReplayGap;
}

/** Examples kept per group. */
export const MAX_EXAMPLES = 3;
