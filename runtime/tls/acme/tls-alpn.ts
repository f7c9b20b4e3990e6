/**
 * TLS-ALPN-01 (RFC 8737) on svc's own HTTPS listener, without disturbing other connections.
 *
 * Node calls the ALPN callback before the certificate callback (SNICallback), both with the
 * TLSSocket as `this`: the ALPN callback picks `acme-tls/1` only when the client offers it and a
 * challenge for its SNI name is pending, and marks the socket; the SNI callback then answers a
 * marked socket with the challenge certificate, and every other one with the normal choice.
 * Every other connection negotiates exactly as with `ALPNProtocols`: the first of the server's
 * protocols the client offers, and a fatal `no_application_protocol` alert when none is (what Node
 * does for `ALPNProtocols`).
 *
 * A connection that negotiated `acme-tls/1` carries no HTTP: the listener closes it after the
 * handshake (`isAcmeTlsAlpn`).
 */
import type tls from 'node:tls';
import type { ChallengeResponder } from './challenges.ts';

const ACME_TLS_ALPN = 'acme-tls/1';

const answered = new WeakSet<tls.TLSSocket>();

/** Whether `socket` completed a TLS-ALPN-01 validation handshake (close it, it carries no HTTP). */
export function isAcmeTlsAlpn(socket: tls.TLSSocket): boolean {
  return answered.has(socket) || socket.alpnProtocol === ACME_TLS_ALPN;
}

type SniCallback = (servername: string, cb: (err: Error | null, ctx?: tls.SecureContext) => void) => void;

/**
 * `options` (from `secureContextOptions`) with TLS-ALPN-01 answers of `responder` added:
 * `ALPNProtocols` becomes an equivalent `ALPNCallback` (Node allows only one of the two) and the
 * SNI callback answers validation handshakes.
 */
export function withTlsAlpnChallenges(options: tls.TlsOptions, responder: ChallengeResponder): tls.TlsOptions {
  const { ALPNProtocols, SNICallback, ...rest } = options;
  const serverProtocols = (Array.isArray(ALPNProtocols) ? ALPNProtocols : []).map(String);
  const sni = SNICallback as SniCallback | undefined;
  return {
    ...rest,
    ALPNCallback: function (this: tls.TLSSocket, { servername, protocols }: { servername: string; protocols: string[] }): string | undefined {
      if (protocols.includes(ACME_TLS_ALPN) && servername && responder.tlsAlpnContext(servername.toLowerCase()) !== undefined) {
        answered.add(this);
        return ACME_TLS_ALPN;
      }
      return serverProtocols.find((p) => protocols.includes(p));
    } as unknown as tls.TlsOptions['ALPNCallback'],
    SNICallback: function (this: tls.TLSSocket, servername: string, cb: (err: Error | null, ctx?: tls.SecureContext) => void): void {
      if (answered.has(this)) {
        const ctx = responder.tlsAlpnContext(servername.toLowerCase());
        if (ctx) return cb(null, ctx);
        return cb(new Error(`no pending TLS-ALPN-01 challenge for ${servername}`));
      }
      if (sni) sni(servername, cb);
      else cb(null);
    },
  };
}
