import { InvalidServiceAccount } from '../../diagnostics/codes/settings.ts';
import { isDirectoryProvider, parseServiceAccount } from '../../plan/service-account.ts';
import type { ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';
import { strField } from './helpers.ts';

const KEY = 'idp_service_account';

/**
 * `invalid-service-account`: an `idp_service_account` (inline or from the environment: the setting
 * has no `_file` form, so the compiler always reads its value) that is not base64 of a JSON object
 * with the fields `idp_provider` needs (compiler/plan/service-account.ts, the reading the runtime
 * uses too; docs/authentication.md "Groups from the directory"). Located at the setting; the
 * message names the missing field, never the value. The generic `oidc` provider has no directory
 * (`svc run` refuses the setting there), and without `idp_provider` (a split proxy-only config)
 * there is nothing to check it against.
 */
export const invalidServiceAccount: ValidationRule = {
  reports: [InvalidServiceAccount],
  check(input, r) {
    const provider = input.config['idp_provider'];
    const text = strField(input.config, KEY);
    if (text === undefined || text === '' || typeof provider !== 'string' || !isDirectoryProvider(provider)) return;
    const res = parseServiceAccount(provider, text);
    if (!res.ok) r.report(InvalidServiceAccount, spanOf(input, KEY), { key: KEY, provider, problem: res.problem }, KEY);
  },
};
