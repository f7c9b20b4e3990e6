/** Redis store settings for tests: a plan's `databroker.storage` for a connection string. */
import { fingerprint } from '../../../compiler/ir/material.ts';
import type { StorageSettings } from '../../../runtime/databroker/redis-options.ts';

/** Test secret only (32 bytes). */
export const STORE_SECRET = Buffer.alloc(32, 7);

export function storage(url: string, over: Partial<StorageSettings> = {}): StorageSettings {
  return { type: 'redis', connection: null, connectionString: { value: url, fingerprint: fingerprint(url) }, certFile: null, keyFile: null, caFile: null, tlsSkipVerify: false, ...over };
}
