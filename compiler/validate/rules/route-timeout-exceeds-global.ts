import { RouteTimeoutExceedsGlobal } from '../../diagnostics/codes/routes.ts';
import { parseDurationMs } from '../../ir/values.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan } from './helpers.ts';

/** Writes milliseconds as a duration (`90000` → `1m30s`), for messages about defaults. */
export function formatMs(ms: number): string {
  if (ms === 0) return '0';
  let rest = ms;
  let out = '';
  for (const [unit, size] of [['h', 3_600_000], ['m', 60_000], ['s', 1000], ['ms', 1]] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) out += `${n}${unit}`;
    rest -= n * size;
  }
  return out;
}

/**
 * `route-timeout-exceeds-global`: a route `timeout` cannot exceed the global timeouts (docs/architecture.md §3).
 * Compared with `timeout_read` and `timeout_write` where they are non-zero; a route timeout of `0`
 * (unlimited) exceeds any non-zero global. Only a `timeout` written on the route is checked: the
 * implicit unlimited timeout of a route with only `idle_timeout` is the documented default.
 * Websocket and SPDY routes are exempt: global timeouts are not enforced for them (docs/running.md "Websockets and SPDY").
 * Reported once, against the tightest global timeout it exceeds.
 */
export const routeTimeoutExceedsGlobal: ValidationRule = {
  reports: [RouteTimeoutExceedsGlobal],
  check(input, r) {
    const server = input.body.settings.server;
    const globals = [
      { key: 'timeout_read', ms: server.timeoutReadMs },
      { key: 'timeout_write', ms: server.timeoutWriteMs },
    ]
      .filter((g) => g.ms > 0)
      .sort((a, b) => a.ms - b.ms);
    if (globals.length === 0) return;
    for (const route of input.routes) {
      const raw = route.raw['timeout'];
      if (raw === undefined || route.raw['allow_websockets'] === true || route.raw['allow_spdy'] === true) continue;
      const ms = raw === 0 ? 0 : typeof raw === 'string' ? parseDurationMs(raw) : undefined;
      if (ms === undefined) continue; // invalid-duration, reported by lowering
      const exceeded = globals.find((g) => ms === 0 || ms > g.ms);
      if (!exceeded) continue;
      const written = input.config[exceeded.key];
      const global = typeof written === 'string' && parseDurationMs(written) === exceeded.ms ? written : formatMs(exceeded.ms);
      r.report(
        RouteTimeoutExceedsGlobal,
        fieldSpan(input, route, 'timeout'),
        { timeout: ms === 0 ? '`0` (unlimited)' : `\`${String(raw)}\``, global: `\`${global}\``, key: exceeded.key },
        fieldPath(route, 'timeout'),
      );
    }
  },
};
