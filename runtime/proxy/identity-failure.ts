/**
 * What an entry point answers when the gate's identity step failed (gate.ts `Admission.identityError`;
 * nothing was picked): 502 `serverless-token-unavailable` when the serverless cloud gave no ID
 * token (the upstream would refuse the request without it: docs/authentication.md "Serverless
 * upstreams"), else 500 `identity-assertion-failed` (the assertion could not be signed).
 */
import { ServerlessTokenError } from '../authn/serverless-token.ts';

export interface IdentityFailure {
  readonly status: 500 | 502;
  readonly reason: 'identity-assertion-failed' | 'serverless-token-unavailable';
  /** The log line's message. */
  readonly log: string;
}

const NO_TOKEN: IdentityFailure = { status: 502, reason: 'serverless-token-unavailable', log: 'serverless ID token unavailable' };
const NOT_SIGNED: IdentityFailure = { status: 500, reason: 'identity-assertion-failed', log: 'identity assertion failed' };

export function identityFailure(e: Error): IdentityFailure {
  return e instanceof ServerlessTokenError ? NO_TOKEN : NOT_SIGNED;
}
