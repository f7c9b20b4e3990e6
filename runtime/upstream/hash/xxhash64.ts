/**
 * xxHash64, the `XX_HASH` ring-hash function and Maglev's host and key hash, from the
 * `xxhash-wasm` package (WebAssembly build of the reference implementation). The WebAssembly
 * module is instantiated once, at import (top-level await), so hashing stays synchronous.
 */
import xxhash from 'xxhash-wasm';

const api = await xxhash();
const encoder = new TextEncoder();

/** xxHash64 of `input` (a string is hashed as its UTF-8 bytes) with `seed`; unsigned 64-bit. */
export function xxHash64(input: string | Uint8Array, seed: bigint = 0n): bigint {
  return api.h64Raw(typeof input === 'string' ? encoder.encode(input) : input, seed);
}
