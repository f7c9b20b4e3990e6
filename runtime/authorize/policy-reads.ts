/**
 * What a route's policy reads of a request (docs/policy.md criteria): the parts a proxy sends to
 * the authorize service and keys its decision cache with. Anything a policy does not read cannot
 * change its verdict, so two requests that agree on everything it reads get the same answer.
 *
 * INVARIANT (complete): every criterion name maps to what its leaf (runtime/policy/criteria.ts)
 * reads; a new criterion fails to compile here until it is listed (the `never` check).
 */
import type { Criterion, Expr, PolicyIR } from '../../compiler/plan/types.ts';

export interface PolicyReads {
  /** The session's identity (user, email, groups, claims, device). */
  readonly identity: boolean;
  readonly method: boolean;
  /** The canonical path. */
  readonly path: boolean;
  /** Lower-case header names whose values (or presence) the policy reads. */
  readonly headers: readonly string[];
  readonly clientAddress: boolean;
  readonly clientCertificate: boolean;
  /**
   * The request time (`date`, `time_of_day`, `day_of_week`): a verdict that depends on the clock is
   * never cached.
   */
  readonly time: boolean;
}

/** The headers `cors_preflight` looks at (their presence). */
const CORS_HEADERS = ['origin', 'access-control-request-method'] as const;

/** What `policy` reads. */
export function policyReads(policy: PolicyIR): PolicyReads {
  let identity = false;
  let method = false;
  let path = false;
  let clientAddress = false;
  let clientCertificate = false;
  let time = false;
  const headers = new Set<string>();
  for (const c of leaves(policy)) {
    const name = c.name;
    switch (name) {
      case 'accept':
      case 'reject':
        break;
      case 'authenticated_user':
      case 'email':
      case 'domain':
      case 'user':
      case 'groups':
      case 'claim':
      case 'device':
        identity = true;
        break;
      case 'http_method':
        method = true;
        break;
      case 'http_path':
        path = true;
        break;
      case 'cors_preflight':
        method = true;
        for (const h of CORS_HEADERS) headers.add(h);
        break;
      case 'client_certificate':
      case 'invalid_client_certificate':
        clientCertificate = true;
        break;
      case 'source_ip':
        clientAddress = true;
        break;
      case 'date':
      case 'time_of_day':
      case 'day_of_week':
        time = true;
        break;
      default: {
        const unlisted: never = name;
        // A bug in svc (a criterion added without its read set): plain Error.
        throw new Error(`bug: policy-reads: criterion ${String(unlisted)} is not listed`);
      }
    }
  }
  return { identity, method, path, headers: [...headers].sort(), clientAddress, clientCertificate, time };
}

/** Every criterion leaf of `policy`. */
function leaves(policy: PolicyIR): Criterion[] {
  const out: Criterion[] = [];
  const walk = (e: Expr): void => {
    if (e.op === 'criterion') out.push(e);
    else if (e.op === 'not') walk(e.arg);
    else for (const a of e.args) walk(a);
  };
  for (const r of policy.rules) walk(r.when);
  return out;
}
