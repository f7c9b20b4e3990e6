/**
 * The 403 answer of a denied request, from the decision and the session: who is signed in, why in
 * words, sign-out and switch user (runtime/authn/pages.ts builds the page).
 */
import { leafWords, reasonWords } from '../policy/words.ts';
import { explainDecision } from '../request/decide.ts';
import type { Decision, DecisionRequest } from '../core/types.ts';
import type { ErrorAnswer } from './error-page.ts';
import type { PlanIndex } from '../plan/index.ts';
import type { AuthState } from './auth-state.ts';
import { csrfToken } from '../core/keys.ts';
import { deniedAnswer } from './pages.ts';
import { FALLBACK_TARGET, safeRedirectTarget } from './redirect-target.ts';
import type { ResolvedSession } from '../sessions/session-cache.ts';

/**
 * Builds the 403 answer of `decision` for `request` (the request as decided, with its client
 * certificate). Denials are rare, so the policy is explained again here for the leaves behind the
 * reasons (the request path skips them); should that second look not deny (the clock moved past a
 * `date` bound), the words come from the decision's reason ids alone.
 */
export function denialAnswer(
  index: PlanIndex,
  decision: Extract<Decision, { outcome: 'deny' }>,
  request: DecisionRequest,
  session: ResolvedSession | null,
  state: AuthState | undefined,
  requestId: string,
  json: boolean,
): ErrorAnswer {
  const x = explainDecision(index, request, session?.identity ?? null);
  const because = x.decision.outcome === 'deny' && x.policy !== null ? x.policy.because : [];
  const words = [...new Set(because.length > 0 ? because.map((l) => leafWords(l.criterion, l.value)) : decision.reasons.map(reasonWords))];
  const identity = session?.identity;
  const name = identity?.claims['name'];
  let here: string | null = null;
  if (x.canonical !== null && state !== undefined) {
    // The URL as the sign-in redirect builds it (docs/decisions.md §4), checked like any target.
    const scheme = request.scheme === 'http' && !index.body.settings.cookie.secure ? 'http' : 'https';
    const c = x.canonical;
    const t = safeRedirectTarget(`${scheme}://${c.host}${c.path}${c.query === '' ? '' : `?${c.query}`}`, state.redirects);
    here = t === FALLBACK_TARGET || t.startsWith('/') ? null : t;
  }
  return deniedAnswer(
    {
      requestId,
      status: decision.status,
      reasons: decision.reasons,
      words,
      user: identity === undefined ? null : { id: identity.user, ...(identity.email !== undefined ? { email: identity.email } : {}), ...(typeof name === 'string' && Object.hasOwn(identity.claims, 'name') ? { name } : {}) },
      csrf: session && state?.keys ? csrfToken(state.keys.csrf, session.record.id) : null,
      here,
    },
    json,
  );
}
