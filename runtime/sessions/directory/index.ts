/**
 * The directory client of a plan (docs/authentication.md "Groups from the directory"): one per
 * provider (./gitlab.ts, ./google.ts, ./azure.ts, ./okta.ts, ./github.ts), built from `idp_service_account` as
 * compiler/plan/service-account.ts reads it. Which providers `svc run` honours is said by
 * runtime/plan/capabilities.ts ({@link DIRECTORY_PROVIDERS}); the others are refused at start.
 */
import type { PlanSettings } from '../../../compiler/plan/types.ts';
import { isDirectoryProvider, parseServiceAccount } from '../../../compiler/plan/service-account.ts';
import { DIRECTORY_PROVIDERS } from '../../plan/capabilities.ts';
import { resolveSecretText } from '../../plan/secrets.ts';
import { azureDirectory } from './azure.ts';
import { gitlabDirectory } from './gitlab.ts';
import { googleDirectory } from './google.ts';
import { githubDirectory } from './github.ts';
import { DirectoryError } from './http.ts';
import { oktaDirectory } from './okta.ts';
import type { DirectoryClient } from './types.ts';


/** The directory of a plan's `idp` settings: null without `idp_service_account`. Throws DirectoryError for a value it cannot use. */
export function directoryClient(idp: PlanSettings['idp'], resolve: (secret: NonNullable<PlanSettings['idp']['serviceAccount']>) => string = (s) => resolveSecretText(s, 'idp_service_account')): DirectoryClient | null {
  if (idp.serviceAccount === null) return null;
  const provider = idp.provider;
  if (!isDirectoryProvider(provider) || !DIRECTORY_PROVIDERS.includes(provider)) throw new DirectoryError(`idp_service_account: svc reads no directory for idp_provider \`${provider ?? 'none'}\``);
  const parsed = parseServiceAccount(provider, resolve(idp.serviceAccount));
  if (!parsed.ok) throw new DirectoryError(`idp_service_account for \`${provider}\` ${parsed.problem}`);
  switch (provider) {
    case 'gitlab':
      return gitlabDirectory(parsed.account, idp.providerUrl);
    case 'google':
      return googleDirectory(parsed.account);
    case 'azure':
      return azureDirectory(parsed.account);
    case 'okta':
      return oktaDirectory(parsed.account, idp.providerUrl);
    case 'github':
      return githubDirectory(parsed.account, idp.providerUrl);
    default:
      throw new DirectoryError(`idp_service_account: svc reads no directory for idp_provider \`${provider}\``);
  }
}

/**
 * The key a user is found under in the directory: Azure's object id (the ID token's `oid`; its
 * `sub` is pairwise and names no directory user), else the subject. Undefined for an Azure session
 * without `oid` (no `profile` scope): the directory neither adds groups to it nor ends it.
 */
export function userKeyOf(provider: string | null, user: { readonly userId: string; readonly claims: Readonly<Record<string, unknown>> }): string | undefined {
  if (provider !== 'azure') return user.userId;
  const oid = user.claims['oid'];
  return typeof oid === 'string' && oid !== '' ? oid : undefined;
}
