/**
 * The directory in the data broker (docs/authentication.md "Groups from the directory"): the last
 * good sync is kept as one record of the session store under {@link DIRECTORY_RECORD_ID}, so every
 * process and role sharing the store (memory, Redis, a cluster's primary, a data broker service)
 * reads the same directory without a store of its own: at sign-in (runtime/authn/callback.ts) and
 * in the identity manager. On Redis it is sealed like every session. The id is no session handle
 * (those are 43 base64url characters, and cookies and tokens carry them sealed), and the identity
 * manager's scan skips it.
 */
import type { Secret } from '../../../compiler/plan/types.ts';
import type { SessionRecord, SessionStore } from '../../core/session-store.ts';
import { groupsOf, type DirectorySnapshot } from './types.ts';

export const DIRECTORY_RECORD_ID = 'svc-directory';

/** How long the last good directory is kept without a successful sync (then sign-ins get claim groups only). */
export const DIRECTORY_KEPT_MS = 30 * 24 * 3_600_000;

export interface StoredDirectory {
  readonly provider: string;
  /** The service account's fingerprint: a directory read with another account is not used. */
  readonly account: string;
  readonly readAtMs: number;
  readonly snapshot: DirectorySnapshot;
}

export const isDirectoryRecord = (id: string): boolean => id === DIRECTORY_RECORD_ID;

export function directoryRecord(d: StoredDirectory): SessionRecord {
  return { id: DIRECTORY_RECORD_ID, userId: '', groups: [], claims: { directory: d }, createdAtMs: d.readAtMs, expiresAtMs: d.readAtMs + DIRECTORY_KEPT_MS };
}

/** The stored directory, when it was read with this provider and account; undefined otherwise. */
export async function readDirectory(store: Pick<SessionStore, 'get'>, provider: string | null, account: Secret | null): Promise<StoredDirectory | undefined> {
  if (account === null) return undefined;
  const record = await store.get(DIRECTORY_RECORD_ID);
  const d = record?.claims['directory'] as StoredDirectory | undefined;
  if (d === undefined || d === null || typeof d !== 'object' || d.provider !== provider || d.account !== account.fingerprint) return undefined;
  const s = d.snapshot as DirectorySnapshot | undefined;
  if (s === undefined || s === null || typeof s.groups !== 'object' || typeof s.members !== 'object') return undefined;
  return d;
}

/**
 * The groups a session holds with a directory: the provider's `groups` claim (ID token, userinfo)
 * together with the user's directory groups (each id, then its names), in that order, once each.
 */
export function mergedGroups(claimGroups: readonly string[], directory: DirectorySnapshot, userKey: string): string[] {
  return [...new Set([...claimGroups, ...groupsOf(directory, userKey)])];
}

/** A user's groups from the `groups` claim (a list of strings, or one string), as sign-in reads it. */
export function claimGroups(claims: Readonly<Record<string, unknown>>): string[] {
  const g = claims['groups'];
  return Array.isArray(g) ? g.filter((x): x is string => typeof x === 'string') : typeof g === 'string' ? [g] : [];
}
