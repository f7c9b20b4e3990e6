/**
 * What each role of a split deployment answers (docs/distributed.md): the proxy serves
 * routes and svc's own endpoints on route hosts (the sign-in hand-off, sign-out, forward auth, the
 * device page: docs/authentication.md "Devices"), never
 * the authenticate service's; the authenticate service serves only its own host's endpoints
 * (sign-in, callback, sign-out, user info, JWKS) and no route. Anything else is 404, as a request
 * for a host svc does not serve. All-in-one (`services: all`) answers everything.
 */
import type { PlanSettings } from '../../compiler/plan/types.ts';
import type { Decision } from '../core/types.ts';
import type { Ruling } from '../request/decide.ts';

const NOT_HERE: Decision & { readonly outcome: 'not_found' } = { outcome: 'not_found', status: 404, reasons: ['no-route'] };

/** `decision` (a decision, or a ruling before its upstream is picked), or 404 when this role does not serve what it decided. */
export function roleAnswers<D extends Decision | Ruling>(services: PlanSettings['mode']['services'], decision: D): D | typeof NOT_HERE {
  switch (services) {
    case 'proxy':
      return decision.outcome === 'internal' && decision.endpoint.service === 'authenticate' ? NOT_HERE : decision;
    case 'authenticate':
      // Bad requests stay 400 (they were refused before any host was served).
      if (decision.outcome === 'bad_request') return decision;
      return decision.outcome === 'internal' && decision.endpoint.service === 'authenticate' ? decision : NOT_HERE;
    default:
      return decision;
  }
}
