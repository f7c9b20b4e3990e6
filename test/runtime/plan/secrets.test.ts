/** Secret resolution at load: references read, fingerprints checked, missing or changed refused. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Secret } from '../../../compiler/plan/types.ts';
import { secretFileText } from '../../../compiler/ir/material.ts';
import { SecretError, resolvePem, resolveSecret, resolveSecretText, type SecretSources } from '../../../runtime/plan/secrets.ts';

const fp = (v: string) => `sha256:${createHash('sha256').update('svc-secret-fingerprint\0').update(v).digest('hex').slice(0, 16)}`;
const PEM = '-----BEGIN PRIVATE KEY-----\nTEST ONLY\n-----END PRIVATE KEY-----\n';
const B64 = Buffer.from(PEM).toString('base64');
const TEXT_FILES: Record<string, string> = { lf: 'abc\n', crlf: 'abc\r\n', none: 'abc', two: 'abc\n\n', space: 'abc \n' };
const sources: SecretSources = {
  env: { COOKIE_SECRET: 'c2VjcmV0', KEY: B64 },
  readFile: (p) => {
    if (p === 'key.pem') return Buffer.from(PEM);
    if (Object.hasOwn(TEXT_FILES, p)) return Buffer.from(TEXT_FILES[p]!);
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
  it('reads a text secret file without its one trailing line break, as the compiler checked it', () => {
    for (const [name, content] of Object.entries(TEXT_FILES)) {
      const text = resolveSecretText({ ref: `file:${name}`, fingerprint: fp(content) }, 'x', sources);
      expect(text, name).toBe(secretFileText(Buffer.from(content)));
    }
    expect(resolveSecretText({ ref: 'file:crlf', fingerprint: fp('abc\r\n') }, 'x', sources)).toBe('abc');
    expect(resolveSecretText({ ref: 'file:two', fingerprint: fp('abc\n\n') }, 'x', sources)).toBe('abc\n');
    expect(resolveSecretText({ ref: 'file:space', fingerprint: fp('abc \n') }, 'x', sources)).toBe('abc ');
    // Inline and environment text is taken as it is.
    expect(resolveSecretText({ value: 'abc\n', fingerprint: fp('abc\n') }, 'x', sources)).toBe('abc\n');
  });
});
