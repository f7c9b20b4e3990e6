/**
 * ACME failures an operator can act on, named: the CA's rate limit, a challenge the CA could not
 * validate (with its problem detail), an account the CA refused (wrong EAB key id or MAC key), and
 * everything else (the CA unreachable, a bad answer). Each is logged once per name and reason and
 * retried with back-off (manager.ts); none stops svc.
 */

import { SvcError } from '../../core/errors.ts';

export type AcmeFailureKind = 'rate-limited' | 'challenge-failed' | 'account-refused' | 'ca-error';

/** Which step of an order failed. */
export type AcmeStep = 'account' | 'order' | 'challenge' | 'finalize';

/** The challenges svc answers (RFC 8737, RFC 8555 §8.3). */
export type ChallengeType = 'tls-alpn-01' | 'http-01';

/** Why the CA could not validate a challenge: its problem document (RFC 8555 §6.7, §8). */
export interface AcmeProblem {
  readonly challenge: ChallengeType;
  /** For example `urn:ietf:params:acme:error:connection`; undefined when the CA's answer could not be read. */
  readonly type: string | undefined;
  readonly detail: string;
}

export class AcmeFailure extends SvcError<'SVC_ERR_ACME'> {
  /** For `challenge-failed`: the CA's problem for each challenge tried, in the order tried. */
  readonly problems: readonly AcmeProblem[];
  constructor(
    readonly kind: AcmeFailureKind,
    readonly name: string,
    message: string,
    options?: { cause?: unknown; problems?: readonly AcmeProblem[] },
  ) {
    super('SVC_ERR_ACME', message, options);
    this.name = 'AcmeFailure';
    this.problems = options?.problems ?? [];
  }
}

const ADVICE: Record<AcmeFailureKind, string> = {
  'rate-limited': "the CA's rate limit was hit: svc retries later; use autocert_use_staging while testing",
  'challenge-failed': "the CA could not validate the challenge: check that DNS points at svc and that port 443 (TLS-ALPN-01, svc's `address`) or port 80 (HTTP-01, svc's `http_redirect_addr`) reaches svc from the internet",
  'account-refused': 'the CA refused the account: check autocert_eab_key_id and autocert_eab_mac_key (External Account Binding)',
  'ca-error': 'the ACME CA failed or could not be reached: check autocert_ca and autocert_trusted_ca',
};

/**
 * What makes two failures the same reason, for logging a reason once (manager.ts): the failure's
 * kind and message with each challenge token taken out. A token is new with every order, and a
 * CA's HTTP-01 problem detail names the URL it fetched, token included (pebble: `Get
 * "http://<name>/.well-known/acme-challenge/<token>": dial tcp …`; Let's Encrypt: `Invalid
 * response from http://<name>/.well-known/acme-challenge/<token>: 404`), so the raw detail would
 * make every retry of the same failure look new.
 */
export function reasonKey(failure: AcmeFailure): string {
  return `${failure.kind}: ${failure.message.replace(/(\/\.well-known\/acme-challenge\/)[A-Za-z0-9_-]+/g, '$1<token>')}`;
}

/** The advice logged with a failure of `kind`. */
export function adviceFor(kind: AcmeFailureKind): string {
  return ADVICE[kind];
}

/**
 * Classifies an error thrown by acme-client at `step`. acme-client keeps only the problem's
 * `detail` in its message, so a rate limit is recognised by its wording (RFC 8555 §6.7
 * `rateLimited`; HTTP 429) and the step says the rest.
 */
export function classify(name: string, step: AcmeStep, e: unknown, eab: boolean): AcmeFailure {
  const message = e instanceof Error ? e.message : String(e);
  const status = (e as { response?: { status?: number } } | null)?.response?.status;
  let kind: AcmeFailureKind;
  if (status === 429 || /rate ?limit|too many/i.test(message)) kind = 'rate-limited';
  else if (step === 'challenge') kind = 'challenge-failed';
  else if (step === 'account' && (eab || /external ?account|eab|unauthori[sz]ed|malformed/i.test(message)) && !/ECONN|ETIMEDOUT|ENOTFOUND|certificate|socket/i.test(message)) kind = 'account-refused';
  else kind = 'ca-error';
  return new AcmeFailure(kind, name, message, { cause: e });
}
