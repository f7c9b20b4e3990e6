/**
 * Time zones for the exact check (docs/diff.md "Exact check"): a zone's UTC offset as the runtime
 * sees it (`Intl`, runtime/policy/criteria.ts), in milliseconds. The encoding lets a zone's offset be
 * any of the offsets it ever has (`zoneOffsets`), which covers every real instant; a witness the real
 * program refutes teaches the solver the true offset around its instant (`offsetInterval`), a fact,
 * so the check stays sound while it refines.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();
const DAY_MS = 86_400_000;
/** The largest instant a `Date` holds. */
export const MAX_TIME_MS = 8.64e15;

/** The offset (ms, local − UTC) of `timeZone` at `ms`, to the second, as `Intl` computes it. */
export function offsetMs(ms: number, timeZone: string): number {
  let fmt = formatters.get(timeZone);
  if (!fmt) {
    fmt = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric', hourCycle: 'h23' });
    formatters.set(timeZone, fmt);
  }
  const p: Record<string, number> = {};
  for (const part of fmt.formatToParts(ms)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  const d = new Date(0);
  d.setUTCFullYear(p['year'] ?? 1970, (p['month'] ?? 1) - 1, p['day'] ?? 1);
  d.setUTCHours(p['hour'] ?? 0, p['minute'] ?? 0, p['second'] ?? 0, 0);
  let diff = d.getTime() - Math.floor(ms / 1000) * 1000;
  // Years before 1 come back era-relative; an offset is within a day, so fold the year error away.
  if (Math.abs(diff) >= DAY_MS) diff = ((((diff % DAY_MS) + DAY_MS + DAY_MS / 2) % DAY_MS) - DAY_MS / 2);
  return diff;
}

const offsetCache = new Map<string, readonly number[]>();

/**
 * Every offset `timeZone` has: sampled every 2 days from 1800 to 2100 (the time zone database has
 * no transition outside it but its recurring rules, which repeat inside it) and at far instants.
 */
export function zoneOffsets(timeZone: string): readonly number[] {
  const cached = offsetCache.get(timeZone);
  if (cached) return cached;
  const set = new Set<number>();
  const from = Date.UTC(1800, 0, 1);
  const to = Date.UTC(2100, 0, 1);
  const step = 2 * DAY_MS;
  let last = NaN;
  for (let t = from; t < to; t += step) {
    const o = offsetMs(t, timeZone);
    if (o !== last) set.add(o);
    last = o;
  }
  for (const t of [-1e14, -6e13, 0, 1e14, 1e15]) {
    const o = offsetMs(t, timeZone);
    if (Number.isFinite(o)) set.add(o);
  }
  const out = [...set].sort((a, b) => a - b);
  offsetCache.set(timeZone, out);
  return out;
}

/** True when `timeZone` has one offset (UTC, `Etc/GMT+5`): then it is encoded exactly. */
export function fixedOffset(timeZone: string): number | undefined {
  const all = zoneOffsets(timeZone);
  return all.length === 1 ? all[0] : undefined;
}

/**
 * The largest interval `[from, to)` around `ms` on which `timeZone` keeps the offset it has at `ms`
 * (bounds found by bisection to the millisecond, searched up to a year away; beyond that the interval
 * stops at a year, which is still a true fact).
 */
export function offsetInterval(ms: number, timeZone: string): { from: number; to: number; offset: number } {
  const offset = offsetMs(ms, timeZone);
  const edge = (dir: 1 | -1): number => {
    let inside = ms;
    let step = 3_600_000;
    let outside: number | undefined;
    while (step <= 366 * DAY_MS) {
      const probe = Math.max(-MAX_TIME_MS, Math.min(MAX_TIME_MS, ms + dir * step));
      if (offsetMs(probe, timeZone) !== offset) {
        outside = probe;
        break;
      }
      inside = probe;
      if (Math.abs(probe) === MAX_TIME_MS) return dir === 1 ? MAX_TIME_MS + 1 : -MAX_TIME_MS;
      step *= 2;
    }
    if (outside === undefined) return dir === 1 ? inside + 1 : inside;
    while (Math.abs(outside - inside) > 1) {
      const mid = Math.floor((inside + outside) / 2);
      if (offsetMs(mid, timeZone) === offset) inside = mid;
      else outside = mid;
    }
    return dir === 1 ? inside + 1 : inside;
  };
  return { from: edge(-1), to: edge(1), offset };
}
