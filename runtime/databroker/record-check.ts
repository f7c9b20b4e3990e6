/**
 * The validation every store applies before it keeps a record (the memory store's rules, in
 * memory-store.ts, for stores that serialize): a Redis store refuses what the memory store refuses.
 */
import { deepFreeze } from '../../compiler/plan/deep-freeze.ts';
import { SessionStoreError, type SessionRecord } from '../core/session-store.ts';

function invalid(message: string, cause?: unknown): SessionStoreError {
  return new SessionStoreError('SVC_ERR_SESSION_RECORD_INVALID', message, cause === undefined ? undefined : { cause });
}

/** Checks `record` and returns its JSON text. Throws `SVC_ERR_SESSION_RECORD_INVALID`. */
export function recordJson(record: SessionRecord): string {
  if (typeof record !== 'object' || record === null) throw invalid('record must be an object');
  if (typeof record.id !== 'string' || record.id === '') throw invalid('record id must be a non-empty string');
  if (typeof record.userId !== 'string') throw invalid('record userId must be a string');
  if (!Number.isSafeInteger(record.expiresAtMs) || !Number.isSafeInteger(record.createdAtMs)) throw invalid('record expiresAtMs and createdAtMs must be safe integers');
  if (!Array.isArray(record.groups) || !record.groups.every((g) => typeof g === 'string')) throw invalid('record groups must be strings');
  try {
    // structuredClone refuses what JSON would silently drop (functions, symbols).
    structuredClone(record);
    return JSON.stringify(record);
  } catch (err) {
    throw invalid('record is not cloneable', err);
  }
}

/** The frozen record in `json`, or undefined when it is not a record with `id`. */
export function recordFromJson(json: string, id: string): SessionRecord | undefined {
  try {
    const r = JSON.parse(json) as SessionRecord;
    if (typeof r !== 'object' || r === null || r.id !== id || !Number.isSafeInteger(r.expiresAtMs)) return undefined;
    return deepFreeze(r);
  } catch {
    return undefined;
  }
}
