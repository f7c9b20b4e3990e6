/** A session record for the store tests: a fresh id, a user with groups and nested claims. */
import { newSessionId, type SessionRecord } from '../../../runtime/core/session-store.ts';

/** A record created at `nowMs` that lives for a minute; `over` replaces any field. */
export function sessionRecord(nowMs: number, over: Partial<SessionRecord> = {}): SessionRecord {
  return {
    id: newSessionId(),
    userId: 'user-1',
    email: 'u@example.com',
    groups: ['admins', 'ops'],
    claims: { name: 'U', nested: { roles: ['a'] } },
    idToken: 'id.tok.en',
    expiresAtMs: nowMs + 60_000,
    createdAtMs: nowMs,
    ...over,
  };
}
