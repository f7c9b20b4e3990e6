/**
 * One certificate order for one name (RFC 8555 §7.4): new order, answer its authorization with
 * TLS-ALPN-01 on svc's HTTPS listener (or HTTP-01 on `http_redirect_addr` when the CA offers no
 * TLS-ALPN-01 and that listener exists), finalize with a fresh key, download the chain.
 * The caller holds the name's lock (lock.ts). Throws `AcmeFailure`.
 */
import acme from 'acme-client';
import type { ChallengeResponder } from './challenges.ts';
import { createCertificateRequest } from './csr.ts';
import { classify, type AcmeStep } from './problems.ts';

export interface OrderOptions {
  readonly mustStaple: boolean;
  /** Whether HTTP-01 can be answered (svc listens on `http_redirect_addr`). */
  readonly http01: boolean;
  readonly eab: boolean;
}

export interface Issued {
  readonly keyPem: string;
  /** Leaf first, then the chain the CA sent. */
  readonly chainPem: string;
}

export async function orderCertificate(client: acme.Client, name: string, responder: ChallengeResponder, options: OrderOptions): Promise<Issued> {
  let step: AcmeStep = 'order';
  const cleanups: (() => void)[] = [];
  try {
    const order = await client.createOrder({ identifiers: [{ type: 'dns', value: name }] });
    const authorizations = await client.getAuthorizations(order);
    step = 'challenge';
    for (const authz of authorizations) {
      if (authz.status === 'valid') continue;
      // acme-client's types list only http-01 and dns-01; the CA also offers tls-alpn-01 (RFC 8737).
      const tlsAlpn = authz.challenges.find((c) => (c.type as string) === 'tls-alpn-01');
      const http = options.http01 ? authz.challenges.find((c) => c.type === 'http-01') : undefined;
      const challenge = tlsAlpn ?? http;
      if (!challenge) throw new Error(`the CA offers no challenge svc can answer for ${name} (offered: ${authz.challenges.map((c) => c.type).join(', ')}; svc answers tls-alpn-01, and http-01 when http_redirect_addr is set)`);
      const keyAuthorization = await client.getChallengeKeyAuthorization(challenge);
      if (challenge === tlsAlpn) {
        const [key, cert] = await acme.crypto.createAlpnCertificate(authz, keyAuthorization, await acme.crypto.createPrivateEcdsaKey('P-256'));
        responder.putTlsAlpn(name, key.toString(), cert.toString());
        cleanups.push(() => responder.removeTlsAlpn(name));
      } else {
        const token = (challenge as { token: string }).token;
        responder.putHttp01(token, keyAuthorization);
        cleanups.push(() => responder.removeHttp01(token));
      }
      await client.completeChallenge(challenge);
      await client.waitForValidStatus(challenge);
    }
    step = 'finalize';
    const request = await createCertificateRequest(name, options.mustStaple);
    const finalized = await client.finalizeOrder(order, request.csrPem);
    const chainPem = await client.getCertificate(finalized);
    return { keyPem: request.keyPem, chainPem };
  } catch (e) {
    throw classify(name, step, e, options.eab);
  } finally {
    for (const c of cleanups) c();
  }
}
