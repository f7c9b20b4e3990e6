/**
 * The email claim (docs/security.md S53; docs/policy.md "Emails", docs/decisions.md §4 and §6 step 5): policy and the
 * identity sent upstream read an identity's email as an address with exactly one `@`, compare its
 * domain case-insensitively, and treat anything that is not an address as no email at all. (Whether
 * the provider vouched for the email is settled at sign-in: test/security/email-claim.test.ts.)
 */
import type { Identity } from '../../../runtime/core/types.ts';
import type { DecisionCase } from '../case.ts';
import { configText } from '../../reference/support.ts';

const who = (email: string | undefined): Identity => ({ user: 'u-1', ...(email === undefined ? {} : { email }), groups: [], claims: { email: email ?? null } });

const policyConfig = (policy: string) =>
  configText([{ from: 'https://app.example.com', to: 'http://app', policy, pass_identity_headers: true }], { jwt_claims_headers: { 'X-Email': 'email' } });

/** Emails that are not one address: each must count as no email for every email criterion. */
const NOT_ADDRESSES = [
  'x@evil.example@corp.example',
  '"x@evil.example"@corp.example',
  'x@corp.example.',
  'x@corp.example ',
  ' x@corp.example',
  'x@-corp.example',
  'x@corp..example',
  'x@[10.0.0.1]',
  'x@corp.example\n',
  'x(c)@corp.example',
  'x@corp.éxample',
  '@corp.example',
  'x..y@corp.example',
  'corp.example',
];

const POLICIES = [
  ['domain', 'allow if domain is "corp.example"'],
  ['domain ends_with', 'allow if domain ends_with "corp.example"'],
  ['email ends_with', 'allow if email ends_with "@corp.example"'],
  ['email contains', 'allow if email contains "corp.example"'],
  ['claim/email ends_with', 'allow if claim/email ends_with "@corp.example"'],
] as const;

const notAnAddress: DecisionCase[] = NOT_ADDRESSES.flatMap((email) =>
  POLICIES.map(([label, policy]): DecisionCase => ({
    name: `an email that is not one address is no email (${label}): ${JSON.stringify(email)}`,
    config: policyConfig(policy),
    request: { host: 'app.example.com' },
    identity: who(email),
    expect: { outcome: 'deny', status: 403 },
  })),
);

const mixedCase: DecisionCase[] = [
  ['allow if domain is "corp.example"', 'domain-ok'],
  ['allow if domain is "Corp.EXAMPLE"', 'domain-ok'],
  ['allow if domain in ["other.example", "CORP.example"]', 'domain-ok'],
  ['allow if email is "Alice@corp.example"', 'email-ok'],
  ['allow if email is "Alice@Corp.Example"', 'email-ok'],
  ['allow if email ends_with "@corp.example"', 'email-ok'],
  ['allow if claim/email has "Alice@CORP.example"', 'claim-ok'],
].map(([policy, reason]) => ({
  name: `a mixed-case domain matches in lower case: ${policy}`,
  config: policyConfig(policy!),
  request: { host: 'app.example.com' },
  identity: who('Alice@Corp.Example'),
  expect: { outcome: 'allow', reasons: [reason!], upstream: { headers: { 'x-email': 'Alice@corp.example' } } },
}));

const localCaseKept: DecisionCase = {
  name: 'the local part keeps its case: `email is "alice@corp.example"` is not `Alice@corp.example`',
  config: policyConfig('allow if email is "alice@corp.example"'),
  request: { host: 'app.example.com' },
  identity: who('Alice@corp.example'),
  expect: { outcome: 'deny', reasons: ['email-unauthorized'] },
};

const notForwarded: DecisionCase = {
  name: 'an email that is not one address is not sent upstream, and the client copy is removed',
  config: policyConfig('allow if authenticated_user'),
  request: { host: 'app.example.com', headers: { 'x-email': ['admin@corp.example'] } },
  identity: who('x@evil.example@corp.example'),
  expect: { outcome: 'allow' },
  absentHeaders: ['x-email'],
};

const rawClaimIgnored: DecisionCase = {
  name: '`claim/email` is the checked email, not a raw claim the identity holds beside it',
  config: policyConfig('allow if claim/email is "x@corp.example"'),
  request: { host: 'app.example.com' },
  identity: { user: 'u-1', groups: [], claims: { email: 'x@corp.example' } },
  expect: { outcome: 'deny', reasons: ['claim-unauthorized'] },
};

export const cases: DecisionCase[] = [...notAnAddress, ...mixedCase, localCaseKept, notForwarded, rawClaimIgnored];
