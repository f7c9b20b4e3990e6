/** docs/security.md S05: programmatic-login tokens go only to loopback or exactly allow-listed callbacks. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { programmaticTarget } from '../../../runtime/authn/programmatic-redirect.ts';

describe('programmaticTarget', () => {
  it('allows loopback callbacks under the default `localhost`', () => {
    for (const ok of ['http://localhost:8000/cb', 'http://127.0.0.1:4321/callback?x=1', 'http://[::1]:9/cb', 'https://localhost/cb', 'HTTP://LOCALHOST:1/cb']) {
      expect(programmaticTarget(ok, ['localhost'])).toBeDefined();
    }
  });

  it('refuses everything else by default', () => {
    for (const bad of [
      'https://evil.example/cb',
      'http://localhost.evil.example/cb',
      'http://127.0.0.1.evil.example/cb',
      'http://user@127.0.0.1/cb',
      'http://127.0.0.1:1/cb#frag',
      'javascript:alert(1)',
      'file:///etc/passwd',
      ' http://127.0.0.1/cb',
      'http://127.0.0.1/c b',
      'http:\\\\127.0.0.1\\cb',
      '//127.0.0.1/cb',
      '/cb',
      '',
    ]) {
      expect(programmaticTarget(bad, ['localhost']), bad).toBeUndefined();
    }
    expect(programmaticTarget(undefined, ['localhost'])).toBeUndefined();
  });

  it('an allow-listed host is matched exactly and over https only; loopback needs `localhost` listed', () => {
    expect(programmaticTarget('https://cli.example.com/cb', ['cli.example.com'])).toBe('https://cli.example.com/cb');
    expect(programmaticTarget('http://cli.example.com/cb', ['cli.example.com'])).toBeUndefined();
    expect(programmaticTarget('https://xcli.example.com/cb', ['cli.example.com'])).toBeUndefined();
    expect(programmaticTarget('https://cli.example.com.evil.example/cb', ['cli.example.com'])).toBeUndefined();
    expect(programmaticTarget('http://127.0.0.1/cb', ['cli.example.com'])).toBeUndefined();
  });

  it('never accepts a target whose host is neither loopback nor listed (property)', () => {
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: true }), (url) => {
        const host = new URL(url).hostname;
        const accepted = programmaticTarget(url, ['localhost']);
        if (accepted !== undefined) expect(['localhost', '127.0.0.1', '[::1]']).toContain(host);
      }),
      { numRuns: 300 },
    );
  });
});
