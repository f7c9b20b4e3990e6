/**
 * ACME failures an operator can act on, named: the CA's rate limit, a challenge the CA could not
 * validate (with its problem detail), an account the CA refused (wrong EAB key id or MAC key), and
 * everything else (the CA unreachable, a bad answer). Each is logged once per name and reason and
 * retried with back-off (manager.ts); none stops svc.
 */

export type AcmeFailureKind = 'rate-limited' | 'challenge-failed' | 'account-refused' | 'ca-error';

/** Which step of an order failed. */
export type AcmeStep = 'account' | 'order' | 'challenge' | 'finalize';

export class AcmeFailure extends Error {
  readonly code = 'SVC_ERR_ACME';
  constructor(
    readonly kind: AcmeFailureKind,
    readonly name: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AcmeFailure';
  }
}

const ADVICE: Record<AcmeFailureKind, string> = {
  'rate-limited': "the CA's rate limit was hit: svc retries later; use autocert_use_staging while testing",
  'challenge-failed': 'the CA could not validate the challenge: check that DNS points at svc and port 443 (TLS-ALPN-01) or http_redirect_addr (HTTP-01) is reachable from the internet',
  'account-refused': 'the CA refused the account: check autocert_eab_key_id and autocert_eab_mac_key (External Account Binding)',
  'ca-error': 'the ACME CA failed or could not be reached: check autocert_ca and autocert_trusted_ca',
};

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
