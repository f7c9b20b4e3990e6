/**
 * Session metrics of svc's own (docs/observability.md "Metric reference"): `svc_sessions_served_stale_total`, the requests served from the
 * session-store outage grace (runtime/sessions/outage-grace.ts; docs/observability.md): a session this
 * process had verified, served while the store could not be reached. Nonzero means users were served
 * on what the store last said, not on what it says now.
 */
import { Counter, type Registry } from 'prom-client';
import type { GraceObserver } from '../../core/session-store.ts';

/** Registers the session metrics in `registry`; returns the observer the request path reports to. */
export function registerSessions(registry: Registry): GraceObserver {
  const stale = new Counter({
    name: 'svc_sessions_served_stale_total',
    help: 'requests served with a session from the outage grace, because the session store could not be reached',
    registers: [registry],
  });
  return { servedStale: () => stale.inc() };
}
