import { describe, expect, it } from 'vitest';
import { isHostName } from '../../../../compiler/validate/rules/invalid-value.ts';
import { formatMs } from '../../../../compiler/validate/rules/route-timeout-exceeds-global.ts';

describe('isHostName', () => {
  it.each(['localhost', 'app.example.com', 'xn--bcher-kva.example', '10.0.0.1', '::1', 'A-1.example.com'])('accepts %s', (s) => expect(isHostName(s)).toBe(true));
  it.each(['', 'https://app.example.com', 'app.example.com:8443', '*.example.com', '-a.example.com', 'a..b', 'a_b.example.com', 'app.example.com.'])('rejects %s', (s) =>
    expect(isHostName(s)).toBe(false),
  );
});

describe('formatMs', () => {
  it('writes durations the way they are configured', () => {
    expect(formatMs(0)).toBe('0');
    expect(formatMs(30_000)).toBe('30s');
    expect(formatMs(90_000)).toBe('1m30s');
    expect(formatMs(3_600_500)).toBe('1h500ms');
  });
});
