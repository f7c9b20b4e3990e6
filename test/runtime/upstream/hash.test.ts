import { describe, expect, it } from 'vitest';
import { murmurHash64A } from '../../../runtime/upstream/hash/murmur2.ts';
import { xxHash64 } from '../../../runtime/upstream/hash/xxhash64.ts';

// Envoy's own vectors (test/common/common/hash_test.cc): `MurmurHash::murmurHash2` with the
// default seed and `HashUtil::xxHash64` with seed 0. Matching them means our rings order hosts as
// Envoy's do.
describe('ring hash functions', () => {
  it('MurmurHash64A matches Envoy’s published vectors', () => {
    expect(murmurHash64A('foo')).toBe(9631199822919835226n);
    expect(murmurHash64A('bar')).toBe(11474628671133349555n);
    expect(murmurHash64A('foo\nbar')).toBe(16306510975912980159n);
    expect(murmurHash64A('lyft')).toBe(12847078931730529320n);
    expect(murmurHash64A('')).toBe(6142509188972423790n);
  });

  it('MurmurHash64A handles whole 8-byte blocks plus a tail (libstdc++ std::hash on x86-64)', () => {
    // Values printed by g++ 12 `std::hash<std::string>`, which is MurmurHash64A with seed 0xc70f6907.
    expect(murmurHash64A('abcdefghijklmnop')).toBe(9002761040096737846n);
    expect(murmurHash64A('abcdefghi')).toBe(13036955925923793583n);
  });

  it('xxHash64 matches Envoy’s published vectors', () => {
    expect(xxHash64('foo')).toBe(3728699739546630719n);
    expect(xxHash64('bar')).toBe(5234164152756840025n);
    expect(xxHash64('foo\nbar')).toBe(8917841378505826757n);
    expect(xxHash64('lyft')).toBe(4400747396090729504n);
    expect(xxHash64('')).toBe(0xef46db3751d8e999n);
  });

  it('hashes strings as UTF-8 bytes', () => {
    expect(xxHash64('é')).toBe(xxHash64(new Uint8Array([0xc3, 0xa9])));
    expect(murmurHash64A('é')).toBe(murmurHash64A(new Uint8Array([0xc3, 0xa9])));
  });
});
