/**
 * Property-file diagnostics (SVC6xxx): problems in the properties file `svc verify` reads
 * (docs/verify.md). Conditions are policy text, so a condition's own mistakes are the policy
 * diagnostics (SVC4xxx), located in the properties file.
 */
import { diag, q } from '../define.ts';

export const VerifyFileUnreadable = diag<{ file: string; problem: string }>(
  'SVC6001', 'verify-file-unreadable', 'error',
  'The properties file could not be read.',
  (a) => `cannot read the properties file ${q(a.file)}: ${a.problem}`,
  'check the path and its permissions',
);

export const VerifyNotAMap = diag<{ what: string; got: string }>(
  'SVC6002', 'verify-not-a-map', 'error',
  'The properties file, or one property in it, is not a map of keys to values.',
  (a) => `${a.what} must be a map, not ${a.got}`,
  'a properties file is `properties:` followed by a list of maps, each with `name`, a scope and one of `only`, `never`, `always` (docs/verify.md)',
);

export const VerifyUnknownKey = diag<{ key: string; where: string; allowed: string; suggestion: string | undefined }>(
  'SVC6003', 'verify-unknown-key', 'error',
  'A key the properties file does not define at this place. Nothing in a properties file is ignored.',
  (a) => `unknown key ${q(a.key)} in ${a.where}`,
  (a) => (a.suggestion ? `did you mean \`${a.suggestion}\`? ` : '') + `${a.where} takes ${a.allowed}`,
);

export const VerifyMissingKey = diag<{ key: string; where: string }>(
  'SVC6004', 'verify-missing-key', 'error',
  'A key that must be given is missing: `properties` at the top, `name` in each property.',
  (a) => `${a.where} has no ${q(a.key)}`,
  (a) => (a.key === 'properties' ? 'list the properties under `properties:`' : 'name each property: the report and the counterexamples use the name'),
);

export const VerifyWrongType = diag<{ what: string; expected: string; got: string }>(
  'SVC6005', 'verify-wrong-type', 'error',
  'A value of the wrong type, e.g. a map where a string or a list of strings is expected.',
  (a) => `${a.what} must be ${a.expected}, not ${a.got}`,
  'scope keys take a string or a list of strings; conditions are policy text in one string',
);

export const VerifyDuplicateName = diag<{ name: string; first: string }>(
  'SVC6006', 'verify-duplicate-name', 'error',
  'Two properties share one name, so a report could not tell them apart.',
  (a) => `property name ${q(a.name)} is already used at ${a.first}`,
  'give each property its own name',
);

export const VerifyBadHostPattern = diag<{ value: string; problem: string }>(
  'SVC6007', 'verify-bad-host-pattern', 'error',
  'A `hosts` pattern that is not a host name, nor `*.` followed by one. A pattern names hosts only: no scheme, port or path.',
  (a) => `${q(a.value)} is not a host pattern: ${a.problem}`,
  'write a host (`app.example.com`) or every host below a domain (`*.corp.example.com`); leave `hosts` out for every host',
);

export const VerifyBadPath = diag<{ value: string }>(
  'SVC6008', 'verify-bad-path', 'error',
  'A `paths` prefix that does not start with `/` or holds characters a canonical path never has (space, control characters, `?`, `#`).',
  (a) => `${q(a.value)} is not a path prefix`,
  'write a prefix of the canonical path, starting with `/`: `/admin`',
);

export const VerifyBadMethod = diag<{ value: string }>(
  'SVC6009', 'verify-bad-method', 'error',
  'A `methods` entry that is not an HTTP method token.',
  (a) => `${q(a.value)} is not an HTTP method`,
  'methods are case-sensitive tokens, as clients send them: `GET`, `DELETE`',
);

export const VerifyFormCount = diag<{ found: string }>(
  'SVC6010', 'verify-form-count', 'error',
  'A property must say exactly one of `only`, `never`, `always`: which identities may, may not, or must reach its scope.',
  (a) => (a.found === '' ? 'property has none of `only`, `never`, `always`' : `property has more than one of \`only\`, \`never\`, \`always\`: ${a.found}`),
  'write one property per claim: `only: <condition>`, `never: <condition>` or `always: <condition>`',
);

export const VerifyConditionNotOne = diag<{ count: number }>(
  'SVC6011', 'verify-condition-not-one', 'error',
  'A condition is one policy condition (what follows `allow if`), not a list of rules.',
  (a) => `a condition is one policy condition; this text holds ${a.count} rules`,
  'combine conditions with `and`/`or`; write the condition without `allow if`',
);

export const VerifyUnknownRoute = diag<{ name: string; suggestion: string | undefined }>(
  'SVC6012', 'verify-unknown-route', 'error',
  'A `routes` entry that names no route of the plan (routes are named by their `name`).',
  (a) => `no route of the plan is named ${q(a.name)}`,
  (a) => (a.suggestion ? `did you mean \`${a.suggestion}\`?` : 'name a route by its `name` field in the config'),
);

export const VerifyNoProperties = diag(
  'SVC6013', 'verify-no-properties', 'error',
  'The file lists no property: it would prove nothing, silently.',
  () => 'the properties file lists no property',
  'list at least one property under `properties:`',
);

export const VerifyEmptyList = diag<{ what: string }>(
  'SVC6014', 'verify-empty-list', 'error',
  'An empty scope list. Its meaning would be a silent "no request", so it is an error.',
  (a) => `${a.what} is empty`,
  'list at least one value, or leave the key out for "every"',
);

export const VerifyScopeMatchesNothing = diag<{ what: string }>(
  'SVC6015', 'verify-scope-matches-nothing', 'warning',
  'A host pattern that matches no route host of the plan. No request there reaches a route: an `only` or `never` property then holds with nothing to check (an `always` one naming the host exactly is broken by its 404s). It is reported so a typo is not taken for a proof.',
  (a) => `${a.what} matches no route host of the plan: no request there reaches a route`,
  'check the pattern against the hosts of the config (`svc compile --summary`)',
);
