import { describe, expect, it } from 'vitest';
import { AcmeFailure, reasonKey } from '../../../../runtime/tls/acme/problems.ts';

describe('failure reasons', () => {
  it('are the same across orders whose HTTP-01 details differ only in the challenge token', () => {
    const detail = (token: string) => `http-01: 1.2.3.4: Invalid response from http://a.example/.well-known/acme-challenge/${token}: 404`;
    const a = new AcmeFailure('challenge-failed', 'a.example', detail('koqt-Xzm1dSvu_wMD'));
    const b = new AcmeFailure('challenge-failed', 'a.example', detail('zJCeTGM4beblU6Za'));
    expect(reasonKey(a)).toBe(reasonKey(b));
    expect(reasonKey(a)).not.toContain('koqt');
  });

  it('differ when anything but the token differs', () => {
    const a = new AcmeFailure('challenge-failed', 'a.example', 'http-01: Invalid response from http://a.example/.well-known/acme-challenge/t: 404');
    const b = new AcmeFailure('challenge-failed', 'a.example', 'http-01: Invalid response from http://a.example/.well-known/acme-challenge/t: 500');
    expect(reasonKey(a)).not.toBe(reasonKey(b));
    expect(reasonKey(new AcmeFailure('ca-error', 'a.example', 'x'))).not.toBe(reasonKey(new AcmeFailure('rate-limited', 'a.example', 'x')));
  });
});
