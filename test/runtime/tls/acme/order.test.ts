import { describe, expect, it } from 'vitest';
import { challengeOrder } from '../../../../runtime/tls/acme/order.ts';

describe('challenge order', () => {
  it('tries TLS-ALPN-01 first, HTTP-01 only with http_redirect_addr, and the one that worked last first', () => {
    expect(challengeOrder({ http01: false, prefer: undefined })).toEqual(['tls-alpn-01']);
    expect(challengeOrder({ http01: true, prefer: undefined })).toEqual(['tls-alpn-01', 'http-01']);
    expect(challengeOrder({ http01: true, prefer: 'http-01' })).toEqual(['http-01', 'tls-alpn-01']);
    // http_redirect_addr removed since HTTP-01 last worked: it cannot be answered any more.
    expect(challengeOrder({ http01: false, prefer: 'http-01' })).toEqual(['tls-alpn-01']);
  });
});
