import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBase64, hasControlChar, isHeaderName, parseDurationMs, parseHostPort } from '../../../compiler/ir/values.ts';

describe('durations', () => {
  it.each([
    ['0', 0],
    ['30s', 30_000],
    ['5m', 300_000],
    ['14h', 50_400_000],
    ['1h45m', 6_300_000],
    ['1.5h', 5_400_000],
    ['250ms', 250],
    ['1m30s500ms', 90_500],
  ])('%s is %d ms', (text, ms) => expect(parseDurationMs(text)).toBe(ms));

  it.each(['', '30', '-5s', '5 m', '1d', 's', '1h 30m', '0s5', 'abc'])('%j is not a duration', (text) => {
    expect(parseDurationMs(text)).toBeUndefined();
  });

  it('sums its parts', () => {
    fc.assert(
      fc.property(fc.nat(99), fc.nat(59), fc.nat(59), (h, m, s) => {
        expect(parseDurationMs(`${h}h${m}m${s}s`)).toBe(((h * 60 + m) * 60 + s) * 1000);
      }),
    );
  });
});

describe('host:port', () => {
  it.each([
    [':443', { host: '', port: 443 }],
    ['0.0.0.0:8443', { host: '0.0.0.0', port: 8443 }],
    ['[::1]:9090', { host: '::1', port: 9090 }],
    ['LocalHost:80', { host: 'localhost', port: 80 }],
  ])('%s', (text, hp) => expect(parseHostPort(text)).toEqual(hp));

  it.each(['443', ':0', ':65536', 'host:', 'a b:80', '::1:80', 'host:80/x'])('%j is rejected', (text) => {
    expect(parseHostPort(text)).toBeUndefined();
  });
});

describe('small syntax checks', () => {
  it('base64 is strict', () => {
    expect(decodeBase64('aGVsbG8=')?.toString()).toBe('hello');
    expect(decodeBase64('aGVsbG8')?.toString()).toBe('hello');
    expect(decodeBase64('not base64!')).toBeUndefined();
    expect(decodeBase64('')).toBeUndefined();
    expect(decodeBase64('aGVsbG8==x')).toBeUndefined();
  });
  it('control characters are found anywhere (S28)', () => {
    expect(hasControlChar('a\nb')).toBe(true);
    expect(hasControlChar('a\u0000')).toBe(true);
    expect(hasControlChar('\u007f')).toBe(true);
    expect(hasControlChar('plain text; with {braces} and $vars')).toBe(false);
  });
  it('header names are tokens', () => {
    expect(isHeaderName('X-Frame-Options')).toBe(true);
    expect(isHeaderName('X Frame')).toBe(false);
    expect(isHeaderName('X:Y')).toBe(false);
    expect(isHeaderName('')).toBe(false);
  });
});
