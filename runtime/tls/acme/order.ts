/**
 * One certificate order for one name (RFC 8555 §7.4): new order, answer its authorization with a
 * challenge svc can answer, finalize with a fresh key, download the chain. The caller holds the
 * name's lock (lock.ts). Throws `AcmeFailure`.
 *
 * Challenges, in order of preference: TLS-ALPN-01 on svc's HTTPS listener, then HTTP-01 on
 * `http_redirect_addr` when that listener exists (or the one that worked last time first). A CA
 * offers both for a DNS name, and svc cannot know which of its ports the CA reaches, so when the
 * CA cannot validate one (its authorization and order are then invalid, RFC 8555 §7.1.6) a fresh
 * order is placed with the next; only when all fail is the order a failure, carrying each
 * challenge's problem (as certmagic/acmez do for the established proxy).
 */
import acme from 'acme-client';
import type { ChallengeResponder } from './challenges.ts';
import { createCertificateRequest } from './csr.ts';
import { AcmeFailure, classify, type AcmeProblem, type AcmeStep, type ChallengeType } from './problems.ts';

export interface OrderOptions {
  readonly mustStaple: boolean;
  /** Whether HTTP-01 can be answered (svc listens on `http_redirect_addr`). */
  readonly http01: boolean;
  readonly eab: boolean;
  /** The challenge to try first (the one that worked for this name last time), when svc can answer it. */
  readonly prefer?: ChallengeType | undefined;
}

export interface Issued {
  readonly keyPem: string;
  /** Leaf first, then the chain the CA sent. */
  readonly chainPem: string;
  /** The challenge the CA validated; undefined when the CA needed none (an authorization still valid). */
  readonly challenge: ChallengeType | undefined;
  /** Challenges that failed before this one succeeded, with the CA's problem for each. */
  readonly failedChallenges: readonly AcmeProblem[];
}

/** The challenges svc answers for `options`, most preferred first. */
export function challengeOrder(options: Pick<OrderOptions, 'http01' | 'prefer'>): ChallengeType[] {
  const all: ChallengeType[] = options.http01 ? ['tls-alpn-01', 'http-01'] : ['tls-alpn-01'];
  const p = options.prefer;
  return p !== undefined && all.includes(p) ? [p, ...all.filter((t) => t !== p)] : all;
}

export async function orderCertificate(client: acme.Client, name: string, responder: ChallengeResponder, options: OrderOptions): Promise<Issued> {
  let remaining = challengeOrder(options);
  const failed: AcmeProblem[] = [];
  for (;;) {
    try {
      const issued = await orderOnce(client, name, responder, options, remaining);
      return { ...issued, failedChallenges: failed };
    } catch (e) {
      if (!(e instanceof AcmeFailure) || e.kind !== 'challenge-failed' || e.problems.length !== 1) throw e;
      const problem = e.problems[0]!;
      failed.push(problem);
      remaining = remaining.filter((t) => t !== problem.challenge);
      if (remaining.length === 0) {
        throw new AcmeFailure('challenge-failed', name, failed.map((p) => `${p.challenge}: ${p.detail}`).join('; '), { cause: e, problems: failed });
      }
    }
  }
}

/** One order answered with the first of `types` the CA offers. */
async function orderOnce(client: acme.Client, name: string, responder: ChallengeResponder, options: OrderOptions, types: readonly ChallengeType[]): Promise<Omit<Issued, 'failedChallenges'>> {
  let step: AcmeStep = 'order';
  const cleanups: (() => void)[] = [];
  let used: ChallengeType | undefined;
  let order: acme.Order | undefined;
  let pending: { type: ChallengeType; url: string } | undefined;
  try {
    order = await client.createOrder({ identifiers: [{ type: 'dns', value: name }] });
    const authorizations = await client.getAuthorizations(order);
    step = 'challenge';
    for (const authz of authorizations) {
      if (authz.status === 'valid') continue;
      // acme-client's types list only http-01 and dns-01; the CA also offers tls-alpn-01 (RFC 8737).
      const type = types.find((t) => authz.challenges.some((c) => (c.type as string) === t));
      const challenge = authz.challenges.find((c) => (c.type as string) === type);
      if (!type || !challenge) throw new AcmeFailure('challenge-failed', name, `the CA offers no challenge svc can answer for ${name} (offered: ${authz.challenges.map((c) => c.type).join(', ')}; svc answers tls-alpn-01, and http-01 when http_redirect_addr is set)`);
      const keyAuthorization = await client.getChallengeKeyAuthorization(challenge);
      if (type === 'tls-alpn-01') {
        const [key, cert] = await acme.crypto.createAlpnCertificate(authz, keyAuthorization, await acme.crypto.createPrivateEcdsaKey('P-256'));
        responder.putTlsAlpn(name, key.toString(), cert.toString());
        cleanups.push(() => responder.removeTlsAlpn(name));
      } else {
        const token = (challenge as { token: string }).token;
        responder.putHttp01(token, keyAuthorization);
        cleanups.push(() => responder.removeHttp01(token));
      }
      pending = { type, url: challenge.url };
      await client.completeChallenge(challenge);
      await client.waitForValidStatus(challenge);
      used = type;
      pending = undefined;
    }
    step = 'finalize';
    const request = await createCertificateRequest(name, options.mustStaple);
    const finalized = await client.finalizeOrder(order, request.csrPem);
    const chainPem = await client.getCertificate(finalized);
    return { keyPem: request.keyPem, chainPem, challenge: used };
  } catch (e) {
    const failure = e instanceof AcmeFailure ? e : classify(name, step, e, options.eab);
    if (failure.kind !== 'challenge-failed' || !pending || !order) throw failure;
    const problem = await challengeProblem(client, order, pending.url, failure.message);
    throw new AcmeFailure('challenge-failed', name, `${pending.type}: ${problem.detail}`, { cause: e, problems: [{ challenge: pending.type, ...problem }] });
  } finally {
    for (const c of cleanups) c();
  }
}

/**
 * The CA's problem document for the challenge at `url` (RFC 8555 §8: the challenge's `error`).
 * acme-client keeps only the detail in the error it throws, so the authorization is read again for
 * the problem's type; when that fails, the type is unknown and the thrown message is the detail.
 */
async function challengeProblem(client: acme.Client, order: acme.Order, url: string, message: string): Promise<{ type: string | undefined; detail: string }> {
  try {
    for (const authz of await client.getAuthorizations(order)) {
      const error = authz.challenges.find((c) => c.url === url)?.error as { type?: unknown; detail?: unknown } | undefined;
      if (error) return { type: typeof error.type === 'string' ? error.type : undefined, detail: typeof error.detail === 'string' && error.detail !== '' ? error.detail : message };
    }
  } catch {
    // The CA unreachable right now: the message acme-client threw is all there is.
  }
  return { type: undefined, detail: message };
}
