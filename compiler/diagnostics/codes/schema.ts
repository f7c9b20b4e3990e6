import { diag } from '../define.ts';

export const UnknownKey = diag<{ key: string; where: string; suggestion: string | undefined }>(
  'SVC2001', 'unknown-key', 'error',
  'A key the configuration does not define. Unknown keys are errors so a typo never silently falls back to a default.',
  (a) => `unknown key \`${a.key}\` in ${a.where}`,
  (a) => (a.suggestion ? `did you mean \`${a.suggestion}\`?` : 'remove it; docs/configuration.md lists every key'),
);

export const WrongType = diag<{ key: string; expected: string; got: string }>(
  'SVC2002', 'wrong-type', 'error',
  'A value of the wrong type, e.g. a list where a string is expected.',
  (a) => `\`${a.key}\` must be ${a.expected}, not ${a.got}`,
  'docs/configuration.md gives the type of every key',
);

export const InvalidEnumValue = diag<{ key: string; value: string; allowed: string; suggestion: string | undefined }>(
  'SVC2003', 'invalid-enum-value', 'error',
  'A value outside the fixed set a key accepts.',
  (a) => `\`${a.key}\` must be one of ${a.allowed}, not \`${a.value}\``,
  (a) => (a.suggestion ? `did you mean \`${a.suggestion}\`?` : undefined),
);

export const RemovedKey = diag<{ key: string; replacement: string }>(
  'SVC2004', 'removed-key', 'error',
  "A key removed in the release notes. It no longer has any effect, so using it is an error that names the replacement.",
  (a) => `\`${a.key}\` was removed`,
  (a) => a.replacement,
);

export const ValueOutOfRange = diag<{ key: string; limit: string }>(
  'SVC2005', 'value-out-of-range', 'error',
  'A number outside the range a key accepts.',
  (a) => `\`${a.key}\` must be ${a.limit}`,
);

export const MissingRequiredField = diag<{ field: string; where: string }>(
  'SVC2006', 'missing-required-field', 'error',
  'An object lacks a field it must have, e.g. a route without `from`.',
  (a) => `${a.where} has no \`${a.field}\``,
  (a) => `add \`${a.field}\``,
);

export const SchemaViolation = diag<{ key: string; detail: string }>(
  'SVC2007', 'schema-violation', 'error',
  'A value the configuration schema rejects for another reason.',
  (a) => `\`${a.key}\` ${a.detail}`,
);

export const DeprecatedKey = diag<{ key: string; replacement: string }>(
  'SVC2008', 'deprecated-key', 'warning',
  'A key that still works but will be removed.',
  (a) => `\`${a.key}\` is deprecated`,
  (a) => a.replacement,
);
