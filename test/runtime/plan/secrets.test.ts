/** Secret resolution at load: references read, fingerprints checked, missing or changed refused. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Secret } from '../../../compiler/plan/types.ts';
import { SecretError, resolvePem, resolveSecret, type SecretSources } from '../../../runtime/plan/secrets.ts';

const fp = (v: string) => `sha256:${createHash('sha256').update('svc-secret-fingerprint\0').update(v).digest('hex').slice(0, 16)}`;
const PEM = '-----BEGIN PRIVATE KEY-----\nTEST ONLY\n-----END PRIVATE KEY-----\n';
const B64 = Buffer.from(PEM).toString('base64');
const sources: SecretSources = {
  env: { COOKIE_SECRET: 'c2VjcmV0', KEY: B64 },
  readFile: (p) => {
    if (p === 'key.pem') return Buffer.from(PEM);
    throw new Error('ENOENT: no such file');
  },
};

function codeOf(secret: Secret): string {
  try {
    resolveSecret(secret, 'cookie_secret', sources);
    return 'ok';
  } catch (e) {
    return e instanceof SecretError ? e.code : String(e);
  }
}

describe('resolveSecret', () => {
  it('reads inline values, environment variables and files', () => {
    expect(resolveSecret({ value: 'abc', fingerprint: fp('abc') }, 'x', sources).data.toString()).toBe('abc');
    expect(resolveSecret({ ref: 'env:COOKIE_SECRET', fingerprint: fp('c2VjcmV0') }, 'x', sources).data.toString()).toBe('c2VjcmV0');
    expect(resolvePem({ ref: 'file:key.pem', fingerprint: fp(PEM) }, 'x', sources)).toBe(PEM);
    expect(resolvePem({ ref: 'env:KEY', fingerprint: fp(B64) }, 'x', sources)).toBe(PEM);
  });
  it('refuses a secret that is missing or changed since the plan was compiled', () => {
    expect(codeOf({ ref: 'env:NOPE', fingerprint: fp('x') })).toBe('SVC_ERR_SECRET_MISSING');
    expect(codeOf({ ref: 'file:gone.pem', fingerprint: fp('x') })).toBe('SVC_ERR_SECRET_MISSING');
    expect(codeOf({ ref: 'env:COOKIE_SECRET', fingerprint: fp('another value') })).toBe('SVC_ERR_SECRET_CHANGED');
  });
});
