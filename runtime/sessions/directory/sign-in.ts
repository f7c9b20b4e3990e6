/**
 * A new session's groups with a directory (docs/authentication.md "Groups from the directory"):
 * the ID token's `groups` claim and the user's groups in the last directory read the store holds.
 */
import type { PlanSettings } from '../../../compiler/plan/types.ts';
import type { SessionStore } from '../../core/session-store.ts';
import { userKeyOf } from './index.ts';
import { mergedGroups, readDirectory } from './record.ts';

/** Plans whose missing directory was already said in this process (once per plan, not per sign-in). */
const toldMissing = new WeakSet<PlanSettings['idp']>();

/**
 * The groups a session starts with. Without `idp_service_account`, the claim's. With it, the
 * claim's and the directory's; when the store holds no directory read with this account yet (the
 * first read comes one `idp_refresh_directory_interval` after the identity manager starts; in a
 * split deployment the data broker role reads it), the claim's, said once as a warning; when the
 * store does not answer, the claim's (the next sync adds the rest).
 */
export async function signInGroups(
  store: Pick<SessionStore, 'get'>,
  idp: PlanSettings['idp'],
  user: { readonly userId: string; readonly groups: readonly string[]; readonly claims: Readonly<Record<string, unknown>> },
  log?: (entry: Record<string, unknown>) => void,
): Promise<readonly string[]> {
  if (idp.serviceAccount === null) return user.groups;
  let directory: Awaited<ReturnType<typeof readDirectory>>;
  try {
    directory = await readDirectory(store, idp.provider, idp.serviceAccount);
  } catch {
    return user.groups;
  }
  if (directory === undefined) {
    if (!toldMissing.has(idp)) {
      toldMissing.add(idp);
      log?.({ level: 'warn', msg: 'sign-in: no directory read with idp_service_account yet; sessions get their claim groups until the identity manager reads it (in a split deployment, give the data broker role the same idp_service_account)' });
    }
    return user.groups;
  }
  const key = userKeyOf(idp.provider, user);
  return key === undefined ? user.groups : mergedGroups(user.groups, directory.snapshot, key);
}
