/**
 * A directory as one sync read it (docs/authentication.md "Groups from the directory"): its groups
 * with the names a policy may use for them, which users belong to which, and which users it knows.
 */
import type { DirectoryCall } from './http.ts';

export interface DirectorySnapshot {
  /** Group id → the other identifiers a `groups` criterion matches (name, email, path). */
  readonly groups: Readonly<Record<string, readonly string[]>>;
  /** User key (the ID token's subject; Azure: its `oid`) → the ids of the user's groups. */
  readonly members: Readonly<Record<string, readonly string[]>>;
  /**
   * Every user the directory has (enabled, not suspended or deprovisioned), or null when the
   * provider's API cannot list them (GitLab: a token sees only its own groups).
   */
  readonly users: readonly string[] | null;
}

/** Reads a whole directory. Rejects with a DirectoryError; nothing is kept from a failed read. */
export interface DirectoryClient {
  readonly provider: string;
  read(call: DirectoryCall): Promise<DirectorySnapshot>;
}

/** Builds a snapshot from groups and their members, each member listed once per group. */
export function snapshot(groups: readonly { id: string; names: readonly string[]; members: readonly string[] }[], users: readonly string[] | null): DirectorySnapshot {
  const g: Record<string, readonly string[]> = Object.create(null) as Record<string, readonly string[]>;
  const m: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  for (const group of groups) {
    g[group.id] = [...new Set(group.names.filter((n) => n !== '' && n !== group.id))];
    for (const user of new Set(group.members)) (m[user] ??= []).push(group.id);
  }
  return { groups: g, members: m, users: users === null ? null : [...new Set(users)].sort() };
}

/** The identifiers of a user's directory groups, as a `groups` criterion sees them: each id, then its names. */
export function groupsOf(directory: DirectorySnapshot, userKey: string): string[] {
  const ids = Object.hasOwn(directory.members, userKey) ? directory.members[userKey]! : [];
  return ids.flatMap((id) => [id, ...(Object.hasOwn(directory.groups, id) ? directory.groups[id]! : [])]);
}
