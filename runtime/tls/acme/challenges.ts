/**
 * Pending ACME challenge answers (RFC 8555 §8), kept in the shared autocert directory
 * (storage.ts) so that any instance sharing it answers the CA's validation request, whichever
 * one placed the order.
 */
import tls from 'node:tls';
import type { AutocertStorage } from './storage.ts';

export class ChallengeResponder {
  constructor(readonly storage: AutocertStorage) {}

  /** Publishes the TLS-ALPN-01 certificate (RFC 8737) for `name`. */
  putTlsAlpn(name: string, keyPem: string, certPem: string): void {
    this.storage.write(this.storage.tlsAlpnPath(name), `${keyPem.trim()}\n${certPem.trim()}\n`);
  }

  removeTlsAlpn(name: string): void {
    this.storage.remove(this.storage.tlsAlpnPath(name));
  }

  /**
   * The secure context answering a TLS-ALPN-01 validation of `name`, or undefined when no
   * challenge is pending for it (a client offering `acme-tls/1` then negotiates as any other).
   */
  tlsAlpnContext(name: string): tls.SecureContext | undefined {
    let text: string | undefined;
    try {
      text = this.storage.read(this.storage.tlsAlpnPath(name));
    } catch {
      return undefined;
    }
    if (text === undefined) return undefined;
    try {
      return tls.createSecureContext({ key: text, cert: text, minVersion: 'TLSv1.2' });
    } catch {
      // Half-replaced by another instance or unreadable: no answer this time; the CA retries.
      return undefined;
    }
  }

  /** Publishes an HTTP-01 key authorization for `token`. */
  putHttp01(token: string, keyAuthorization: string): void {
    const path = this.storage.http01Path(token);
    if (path === undefined) throw new Error(`bug: ACME token is not base64url: ${JSON.stringify(token)}`);
    this.storage.write(path, keyAuthorization);
  }

  removeHttp01(token: string): void {
    const path = this.storage.http01Path(token);
    if (path !== undefined) this.storage.remove(path);
  }

  /** The key authorization for an HTTP-01 `token`, or undefined (then 404). */
  http01(token: string): string | undefined {
    const path = this.storage.http01Path(token);
    if (path === undefined) return undefined;
    try {
      return this.storage.read(path);
    } catch {
      return undefined;
    }
  }
}
