import { describe, expect, it } from 'vitest';
import { checksumInt } from '../../../../runtime/observe/metrics/config.ts';

describe('config_checksum_int64', () => {
  it('is the first 48 bits of the checksum: exact in a float64 sample, equal for equal plans', () => {
    const c = `sha256:${'ab'.repeat(32)}`;
    expect(checksumInt(c)).toBe(0xababababab_ab);
    expect(Number.isSafeInteger(checksumInt(`sha256:${'f'.repeat(64)}`))).toBe(true);
    expect(checksumInt(`sha256:${'0'.repeat(11)}1${'0'.repeat(52)}`)).toBe(1);
    expect(checksumInt('not a checksum')).toBe(0);
  });
});
