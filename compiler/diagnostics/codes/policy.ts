/**
 * Policy diagnostics (SVC4xxx): problems in a route's `policy`, in either surface (YAML/JSON
 * policy documents or the text syntax). docs/policy.md describes the language.
 */
import { diag, q } from '../define.ts';

export const PolicySyntaxError = diag<{ found: string; expected: string }>(
  'SVC4001', 'policy-syntax-error', 'error',
  'The policy text syntax could not be parsed at this point. Every syntax error in a policy is reported, not just the first.',
  (a) => `syntax error in policy text: unexpected ${a.found}; expected ${a.expected}`,
  'a policy is one rule per line: `allow if <condition>` or `deny if <condition>` (docs/policy.md)',
);

export const PolicyUnknownCriterion = diag<{ name: string; suggestion: string | undefined }>(
  'SVC4002', 'policy-unknown-criterion', 'error',
  'A criterion name the policy language does not define.',
  (a) => `unknown policy criterion ${q(a.name)}`,
  (a) =>
    a.suggestion
      ? `did you mean \`${a.suggestion}\`?`
      : 'docs/policy.md lists every criterion (e.g. `email`, `domain`, `groups`, `claim/<name>`, `http_path`)',
);

export const PolicyUnknownMatcher = diag<{ criterion: string; matcher: string; allowed: string; suggestion: string | undefined }>(
  'SVC4003', 'policy-unknown-matcher', 'error',
  'A matcher (`is`, `in`, `has`, ...) that the criterion does not accept.',
  (a) => `criterion \`${a.criterion}\` has no matcher ${q(a.matcher)}`,
  (a) => (a.suggestion ? `did you mean \`${a.suggestion}\`? ` : '') + `\`${a.criterion}\` accepts ${a.allowed}`,
);

export const PolicyWrongValueType = diag<{ what: string; expected: string; got: string }>(
  'SVC4004', 'policy-wrong-value-type', 'error',
  'A policy value of the wrong type, e.g. a list where one string is expected.',
  (a) => `${a.what} must be ${a.expected}, not ${a.got}`,
  'quote single values (`"..."`) and write several values as a list (`["a", "b"]`)',
);

export const PolicyEmptyList = diag<{ what: string }>(
  'SVC4005', 'policy-empty-list', 'error',
  'An empty `in`/`not_in` value list. Its meaning would be a silent "never" or "always", so it is an error. (Empty operator lists and conditions match nothing, with warning SVC4025.)',
  (a) => `${a.what} is empty`,
  'list at least one value, or use `accept`/`reject` to say "always"/"never" explicitly',
);

export const PolicyStatementWithoutAction = diag(
  'SVC4006', 'policy-statement-without-action', 'error',
  'A policy statement has neither `allow` nor `deny`.',
  () => 'policy statement has neither `allow` nor `deny`',
  'write `allow: {or: [...]}` or `deny: {or: [...]}`',
);

export const PolicyUnknownStatementKey = diag<{ key: string; suggestion: string | undefined }>(
  'SVC4007', 'policy-unknown-statement-key', 'error',
  'A key in a policy statement other than `allow` and `deny`.',
  (a) => `unknown key ${q(a.key)} in policy statement`,
  (a) => (a.suggestion ? `did you mean \`${a.suggestion}\`?` : 'a policy statement holds only `allow` and `deny`'),
);

export const PolicyBooleanFalse = diag<{ criterion: string }>(
  'SVC4008', 'policy-boolean-false', 'error',
  'A value-less criterion (`accept`, `reject`, `authenticated_user`, `cors_preflight`, `invalid_client_certificate`) set to a value that reads as "no" (`false`, `0`, `no`, `off`). The established proxy ignores the value and applies the criterion anyway, while the writer almost certainly meant the opposite: svc refuses to guess. Negation is written with `not`. (Other values are ignored with warning SVC4024.)',
  (a) => `criterion \`${a.criterion}\` is set to "no": svc does not guess whether that means the criterion or its opposite`,
  (a) =>
    a.criterion === 'accept'
      ? 'remove the criterion, or use `reject: true` for "never"'
      : a.criterion === 'reject'
        ? 'remove the criterion, or use `accept: true` for "always"'
        : `to match the opposite, put \`${a.criterion}: true\` under \`not\``,
);

export const PolicyInvalidCidr = diag<{ value: string; problem: string }>(
  'SVC4009', 'policy-invalid-cidr', 'error',
  'A `source_ip` value that is not an IPv4/IPv6 address or CIDR block.',
  (a) => `${q(a.value)} is not a valid IP address or CIDR block: ${a.problem}`,
  'write an address (`10.1.2.3`, `2001:db8::1`) or a block (`10.0.0.0/8`, `2001:db8::/32`)',
);

export const PolicyInvalidDate = diag<{ value: string }>(
  'SVC4010', 'policy-invalid-date', 'error',
  'A `date` bound that is not an ISO-8601 instant with a time zone offset.',
  (a) => `${q(a.value)} is not an ISO-8601 instant`,
  'write a date, time and offset, e.g. `2025-01-31T17:00:00Z` or `2025-01-31T18:00:00+01:00`',
);

export const PolicyInvalidTime = diag<{ value: string }>(
  'SVC4011', 'policy-invalid-time', 'error',
  'A `time_of_day` bound that is not a 24-hour `HH:MM` time.',
  (a) => `${q(a.value)} is not a time of day`,
  'write a 24-hour time `HH:MM` from `00:00` to `23:59`, e.g. `09:00` or `17:30`',
);

export const PolicyInvalidTimezone = diag<{ value: string }>(
  'SVC4012', 'policy-invalid-timezone', 'error',
  'A `timezone` that is not an IANA time zone name known to the runtime.',
  (a) => `${q(a.value)} is not a known IANA time zone`,
  'use an IANA name such as `UTC`, `Europe/Paris` or `America/New_York`',
);

export const PolicyInvalidDay = diag<{ value: string; suggestion: string | undefined }>(
  'SVC4013', 'policy-invalid-day', 'error',
  'A `day_of_week` value that is not a day name.',
  (a) => `${q(a.value)} is not a day of the week`,
  (a) => (a.suggestion ? `did you mean \`${a.suggestion}\`? ` : '') + 'use `mon`, `tue`, `wed`, `thu`, `fri`, `sat` or `sun`',
);

export const PolicyEmptyClaimName = diag(
  'SVC4014', 'policy-empty-claim-name', 'error',
  'A `claim/<name>` criterion without a claim name.',
  () => 'claim criterion has no claim name',
  'name the claim after the slash: `claim/family_name`, or quote odd names: `claim/"https://example.com/roles"`',
);

export const PolicyControlCharacter = diag<{ what: string; value: string }>(
  'SVC4015', 'policy-control-character', 'error',
  'A policy value containing a control character (U+0000 to U+001F or U+007F). Such values never match real requests and usually come from a copy-paste mistake.',
  (a) => `${a.what} ${q(a.value)} contains a control character`,
  'remove the control character (tabs and line breaks included)',
);

export const PolicyUnknownOperator = diag<{ key: string; suggestion: string | undefined; isCriterion: boolean }>(
  'SVC4016', 'policy-unknown-operator', 'error',
  'A key in a policy condition other than `and`, `or`, `not` and `nor`.',
  (a) => `unknown policy operator ${q(a.key)}`,
  (a) =>
    a.isCriterion
      ? `criteria go inside an operator list: \`or: [{${a.key}: ...}]\``
      : a.suggestion
        ? `did you mean \`${a.suggestion}\`?`
        : 'a condition holds `and`, `or`, `not` (none of) or `nor` (not all of), each a list of criteria',
);

export const PolicyCriterionShape = diag<{ got: string }>(
  'SVC4017', 'policy-criterion-shape', 'error',
  'A criterion in a policy document must be an object with exactly one key, the criterion name.',
  (a) => `a policy criterion must be an object with one key, not ${a.got}`,
  'write one criterion per list item: `- email: {is: "a@example.com"}`; put several under `and`/`or`',
);

export const PolicyMissingMatcher = diag<{ criterion: string; allowed: string }>(
  'SVC4018', 'policy-missing-matcher', 'error',
  'A criterion that needs a matcher (`is`, `in`, `has`, `after`, ...) has none.',
  (a) => `criterion \`${a.criterion}\` needs a matcher`,
  (a) => `\`${a.criterion}\` accepts ${a.allowed}`,
);

export const PolicyInvalidFingerprint = diag<{ value: string }>(
  'SVC4019', 'policy-invalid-fingerprint', 'error',
  'A `client_certificate` fingerprint that is not a SHA-256 digest in hex.',
  (a) => `${q(a.value)} is not a SHA-256 certificate fingerprint`,
  'write 64 hex digits, optionally in colon-separated pairs (`openssl x509 -noout -fingerprint -sha256`)',
);

export const PolicyDuplicateMatcher = diag<{ criterion: string; matcher: string }>(
  'SVC4020', 'policy-duplicate-matcher', 'error',
  'A range criterion (`date`, `time_of_day`, `day_of_week`) gives the same bound or option twice.',
  (a) => `criterion \`${a.criterion}\` sets \`${a.matcher}\` twice`,
  'keep one; to allow several windows, write several criteria under `or`',
);

export const PolicyEmptyRange = diag<{ criterion: string; after: string; before: string }>(
  'SVC4021', 'policy-empty-range', 'error',
  'A `date` range whose `after` is not before its `before`, or a `time_of_day` window whose bounds are equal: it can never match.',
  (a) => `criterion \`${a.criterion}\` range after ${q(a.after)} before ${q(a.before)} can never match`,
  (a) =>
    a.criterion === 'time_of_day'
      ? 'a window may wrap midnight (`after 22:00 before 06:00`), but its bounds must differ'
      : 'swap the bounds, or use `or` for "outside this range"',
);

export const PolicyEmptyStringValue = diag<{ what: string }>(
  'SVC4022', 'policy-empty-value', 'error',
  'An empty string where a name, fingerprint, address or time zone is required.',
  (a) => `${a.what} is empty`,
  'give a value, or remove the criterion',
);

export const PolicyMixedOperators = diag<{ what: string; keys: readonly string[] }>(
  'SVC4023', 'policy-mixed-operators', 'warning',
  'A condition with several operators side by side (`and`, `or`, `not`, `nor` in one map) holds when ANY of them holds, as in the established proxy (each operator is its own rule body there). The reading is easy to get wrong, so it is pointed out.',
  (a) => `the condition of ${a.what} has ${a.keys.map((k) => `\`${k}\``).join(', ')} side by side: it holds when any one of them holds (or), not all`,
  'to require all of them, nest them in one `and: [...]`; to keep "any of", nothing to change',
);

export const PolicyBooleanValueIgnored = diag<{ criterion: string; written: string }>(
  'SVC4024', 'policy-boolean-value-ignored', 'warning',
  'A value-less criterion (`accept`, `reject`, `authenticated_user`, `cors_preflight`, `invalid_client_certificate`) written with a value other than `true` (`accept: 1`, as the established proxy\'s own examples do). The value is ignored: the criterion is in force. Values that read as "no" (`false`, `0`, `no`, `off`) stay an error (SVC4008), since there the operator meant the opposite.',
  (a) => `criterion \`${a.criterion}\` ignores its value ${a.written}: it is in force, as if written \`${a.criterion}: true\``,
  (a) => `write \`${a.criterion}: true\` to say so`,
);

export const PolicyMatchesNothing = diag<{ what: string; meaning: string }>(
  'SVC4025', 'policy-matches-nothing', 'warning',
  'An empty policy statement, an empty condition (`allow: {}`, `allow:` with nothing) or an empty operator list (`and: []`, `or: []`, `not: []`, `nor: []`). As in the established proxy, it matches no request: an empty `allow` allows nobody, an empty `deny` denies nobody, an empty statement adds no rule.',
  (a) => `${a.what} is empty: ${a.meaning}`,
  'write the criteria it should hold, or delete it; to say "never" on purpose, write `reject: true`',
);

