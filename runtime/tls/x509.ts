/**
 * The X.509 library, loaded once and configured: `@peculiar/x509` over Node's WebCrypto.
 *
 * Why this library: Node's `X509Certificate` reads certificates but can neither create one (needed
 * for the self-signed certificate of docs/running.md "TLS") nor read a CRL (needed for `client_crl`).
 * `@peculiar/x509` does both with one maintained, typed code base (ECDSA P-256 included), where
 * `selfsigned` only generates and `pkijs` needs hand-assembled ASN.1 for the same work.
 * It depends on tsyringe, which requires the `reflect-metadata` polyfill to be loaded first;
 * ESM evaluates imports in order, so the side-effect import below runs before the library.
 */
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export { x509 };

/** ECDSA P-256 with SHA-256: the key and signature algorithm of every certificate svc generates. */
export const EC_P256: webcrypto.EcKeyGenParams & webcrypto.EcdsaParams = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
