/**
 * What the access line records for `svc diff --replay` (docs/diff.md "Replaying real traffic"):
 * the identity's attributes a policy reads besides the user and email (already on the line), taken
 * from the session as the decision saw it, and the CORS-preflight shape of an OPTIONS request.
 *
 * CONTRACT (no secrets, bounded): group names, the values of the claims the plan's policies read
 * (`claim/NAME`: values an operator writes into a policy, never a token), the device's credential id
 * (a public identifier), its type and approval; never a token, cookie, session id or header value.
 * At most {@link MAX_GROUPS} groups and {@link MAX_CLAIM_VALUES} values per claim, each at most
 * {@link MAX_VALUE_CHARS} characters and {@link MAX_IDENTITY_CHARS} in all; what does not fit is
 * left out and the line says `identityCut: true`, so replay counts it as not exactly replayable
 * instead of deciding on a partial identity. A user in 500 groups costs a bounded line.
 *
 * Cost: a signed-in request whose groups fit (the common case) reuses the session's own array; the
 * claim names are found once per plan body.
 */
import type { Expr, PlanBody } from '../../../compiler/plan/types.ts';
import type { Identity, RequestHeaders } from '../../core/types.ts';
import { claimValues } from '../../policy/criteria.ts';
import type { AccessEntry } from './access-line.ts';

/** At most this many groups on a line. */
export const MAX_GROUPS = 64;
/** At most this many values of one claim. */
export const MAX_CLAIM_VALUES = 16;
/** At most this many claim names (the plan's policies rarely read more than a few). */
export const MAX_CLAIMS = 16;
/** A group name or claim value longer than this is not logged. */
export const MAX_VALUE_CHARS = 256;
/** At most this many characters of group names and claim values on one line, all together. */
export const MAX_IDENTITY_CHARS = 4096;

/** The identity part of an access line's replay block. */
export type IdentityAttributes = Pick<AccessEntry, 'groups' | 'claims' | 'device' | 'identityCut'>;

const claimNamesOf = new WeakMap<PlanBody, readonly string[]>();

/**
 * The claim names the plan's route policies read (`claim/NAME`), sorted; `email` excepted: a
 * policy's `claim/email` is the checked email (runtime/policy/criteria.ts), which the line has.
 */
export function policyClaimNames(body: PlanBody): readonly string[] {
  let names = claimNamesOf.get(body);
  if (names === undefined) {
    const found = new Set<string>();
    const walk = (e: Expr): void => {
      if (e.op === 'criterion') {
        if (e.name === 'claim' && e.claim !== 'email') found.add(e.claim);
      } else if (e.op === 'not') walk(e.arg);
      else for (const a of e.args) walk(a);
    };
    for (const r of body.routes) for (const rule of r.policy.rules) walk(rule.when);
    names = [...found].sort();
    claimNamesOf.set(body, names);
  }
  return names;
}

/** The replay attributes of a signed-in request's identity under `body`. */
export function identityAttributes(identity: Identity, body: PlanBody): IdentityAttributes {
  let cut = false;
  let chars = 0;
  let groups = identity.groups;
  let fits = groups.length <= MAX_GROUPS;
  for (let i = 0; fits && i < groups.length; i++) {
    const n = groups[i]!.length;
    chars += n;
    if (n > MAX_VALUE_CHARS || chars > MAX_IDENTITY_CHARS) fits = false;
  }
  if (!fits) {
    // The rare user in very many groups: keep what fits, in the session's order, and say it was cut.
    cut = true;
    chars = 0;
    const kept: string[] = [];
    for (const g of identity.groups) {
      if (kept.length === MAX_GROUPS) break;
      if (g.length > MAX_VALUE_CHARS || chars + g.length > MAX_IDENTITY_CHARS) continue;
      chars += g.length;
      kept.push(g);
    }
    groups = kept;
  }
  let claims: Record<string, readonly string[]> | undefined;
  const names = policyClaimNames(body);
  if (names.length > 0) {
    claims = {};
    for (let k = 0; k < names.length; k++) {
      const name = names[k]!;
      if (k === MAX_CLAIMS) {
        cut = true;
        break;
      }
      const values = claimValues(identity, name);
      const kept: string[] = [];
      for (const v of values) {
        if (kept.length === MAX_CLAIM_VALUES || v.length > MAX_VALUE_CHARS || chars + v.length > MAX_IDENTITY_CHARS) {
          cut = true;
          continue;
        }
        chars += v.length;
        kept.push(v);
      }
      claims[name] = kept;
    }
  }
  const d = identity.device;
  return {
    groups,
    claims,
    device: d === undefined ? undefined : { id: d.id.length <= MAX_VALUE_CHARS ? d.id : d.id.slice(0, MAX_VALUE_CHARS), type: d.type, approved: d.approved },
    identityCut: cut || (d !== undefined && d.id.length > MAX_VALUE_CHARS) ? true : undefined,
  };
}

/**
 * For an OPTIONS request, whether it is a CORS preflight as the `cors_preflight` criterion reads it
 * (`Origin` and `Access-Control-Request-Method` present); undefined for any other method.
 */
export function preflightOf(method: string | undefined, headers: RequestHeaders): boolean | undefined {
  if (method !== 'OPTIONS') return undefined;
  return headers['origin'] !== undefined && headers['access-control-request-method'] !== undefined;
}
