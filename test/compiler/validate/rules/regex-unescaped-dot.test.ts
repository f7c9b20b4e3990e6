import { describe, expect, it } from 'vitest';
import { hasSuspiciousDot } from '../../../../compiler/validate/rules/regex-unescaped-dot.ts';
import { re2Problem } from '../../../../compiler/validate/rules/route-invalid-regex.ts';

describe('hasSuspiciousDot', () => {
  it.each(['^/files/report.pdf$', 'app.example.com', '/v1.json', '/v1.2/'])('flags %s', (s) => expect(hasSuspiciousDot(s)).toBe(true));
  it.each(['^/files/.*', '/a/.+', 'app\\.example\\.com', '[a.b]', '[^.]x.', '/.well-known', '[]a.b]x', 'a\\\\.'])('accepts %s', (s) => {
    expect(hasSuspiciousDot(s)).toBe(false);
  });
});

describe('re2Problem', () => {
  it('accepts RE2 syntax', () => {
    expect(re2Problem('^/api/(v[0-9]+)/.*$')).toBeUndefined();
    expect(re2Problem('(?P<id>[0-9]+)')).toBeUndefined();
  });
  it('rejects look-around and backreferences with the parser reason', () => {
    expect(re2Problem('^/(?!admin)')).toMatch(/\(\?!/);
    expect(re2Problem('(a)\\1')).toMatch(/\\1/);
    expect(re2Problem('[')).toMatch(/missing closing \]/);
  });
});
