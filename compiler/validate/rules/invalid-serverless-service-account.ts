import { InvalidServerlessServiceAccount } from '../../diagnostics/codes/settings.ts';
import { serverlessAccountProblem } from '../../plan/serverless-account.ts';
import type { ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';
import { strField } from './helpers.ts';

const KEY = 'hostedcloud_serverless_authentication_service_account';

/**
 * `invalid-serverless-service-account`: a `hostedcloud_serverless_authentication_service_account`
 * (inline or from the environment) that is not base64 of a service-account key file with
 * `client_email`, a PEM `private_key` and, when given, an http(s) `token_uri`
 * (compiler/plan/serverless-account.ts, the reading the runtime uses too; docs/authentication.md
 * "Serverless upstreams"). Located at the setting; the message names the field, never the value.
 * Without the check, svc run refused such a plan only when it started (`SVC_ERR_SERVERLESS_TOKEN`).
 */
export const invalidServerlessServiceAccount: ValidationRule = {
  reports: [InvalidServerlessServiceAccount],
  check(input, r) {
    const text = strField(input.config, KEY);
    if (text === undefined || text === '') return;
    const res = serverlessAccountProblem(text);
    if (res !== undefined) r.report(InvalidServerlessServiceAccount, spanOf(input, KEY), { key: KEY, problem: res.problem }, KEY);
  },
};
