import { describe, expect, it } from 'vitest';
import { x509 } from '../../../../runtime/tls/x509.ts';
import { createCertificateRequest, TLS_FEATURE_OID } from '../../../../runtime/tls/acme/csr.ts';

describe('certificate requests', () => {
  it('carry the name as the only DNS SAN, and status_request (RFC 7633) only when must-staple is asked', async () => {
    for (const mustStaple of [true, false]) {
      const r = await createCertificateRequest('app.example.com', mustStaple);
      const csr = new x509.Pkcs10CertificateRequest(r.csrPem);
      expect(await csr.verify()).toBe(true);
      const san = new x509.SubjectAlternativeNameExtension(csr.getExtension('2.5.29.17')!.rawData);
      expect(san.names.items.map((n) => [n.type, n.value])).toEqual([['dns', 'app.example.com']]);
      const feature = csr.getExtension(TLS_FEATURE_OID);
      if (mustStaple) expect(Buffer.from(feature!.value).toString('hex')).toBe('3003020105');
      else expect(feature).toBeNull();
      expect(r.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    }
  });
});
