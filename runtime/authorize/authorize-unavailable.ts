/**
 * The failure of a question to the authorize service (remote-authorizer.ts), in a file of its own:
 * the request path tells it apart (remote-policy.ts) without loading the gRPC client, which a
 * process loads only in the proxy role (docs/architecture.md §5 "Lazy feature loading").
 */
import { SvcError } from '../core/errors.ts';

/** Why a decision could not be had: the gate's 503 reason. */
export type AuthorizeProblem = 'authorize-unavailable' | 'authorize-route-mismatch';

/** A policy question the authorize service could not answer; `code` follows `problem`. */
export class AuthorizeUnavailable extends SvcError<'SVC_ERR_AUTHORIZE_UNAVAILABLE' | 'SVC_ERR_ROUTE_MISMATCH'> {
  constructor(
    readonly problem: AuthorizeProblem,
    message: string,
    options?: ErrorOptions,
  ) {
    super(problem === 'authorize-route-mismatch' ? 'SVC_ERR_ROUTE_MISMATCH' : 'SVC_ERR_AUTHORIZE_UNAVAILABLE', message, options);
    this.name = 'AuthorizeUnavailable';
  }
}
