/**
 * Source diagnostics (SVC1xxx): problems reading configuration text in any format (YAML, JSON, TOML,
 * `.properties`) or from environment variables, before any key is given a meaning.
 */
import { diag, q } from '../define.ts';

/** Supported config file extensions, as listed in messages. */
const FORMATS = '`.yaml`, `.yml`, `.json`, `.toml`, `.properties` or `.props`';

export const ConfigFormatUnknown = diag<{ file: string }>(
  'SVC1001', 'config-format-unknown', 'error',
  'The config file name does not end in an extension svc reads; the format is chosen by extension only.',
  (a) => `cannot tell the format of ${q(a.file)} from its extension`,
  `name the file with one of ${FORMATS}`,
);

export const ConfigNotAMap = diag<{ got: string }>(
  'SVC1002', 'config-not-a-map', 'error',
  'The top level of a config file must be a map of settings.',
  (a) => `the top level of the config file is ${a.got}, not a map of settings`,
  'write settings as `key: value` pairs at the top level (routes go under `routes:`)',
);

export const DuplicateKey = diag<{ key: string; first: string }>(
  'SVC1003', 'duplicate-key', 'error',
  'A key is given twice in the same map. Formats disagree on which one wins, so svc accepts neither.',
  (a) => `duplicate key ${q(a.key)}`,
  (a) => `the key is first given at ${a.first}; keep one of them`,
);

export const NestingTooDeep = diag<{ limit: number }>(
  'SVC1004', 'nesting-too-deep', 'error',
  'Configuration text nests lists and maps deeper than svc reads; no real configuration comes close.',
  (a) => `values are nested more than ${a.limit} levels deep`,
  'flatten the structure; svc configuration needs a handful of levels',
);

export const NumberNotRepresentable = diag<{ text: string }>(
  'SVC1005', 'number-not-representable', 'error',
  'A number that JSON cannot hold exactly: infinity, not-a-number, or an integer beyond 2^53.',
  (a) => `number ${q(a.text)} cannot be represented exactly`,
  'use a finite number within ±9007199254740991, or quote it to make it a string',
);

export const ReservedKey = diag<{ key: string }>(
  'SVC1006', 'reserved-key', 'error',
  'A map key named `__proto__`. In JavaScript it names an object\'s prototype rather than a property, so such a key could be dropped silently or change how other keys read; no setting, header or claim needs the name.',
  (a) => `the key ${q(a.key)} is reserved`,
  'rename or remove the key',
);

export const YamlSyntax = diag<{ problem: string }>(
  'SVC1010', 'yaml-syntax', 'error',
  'The YAML text does not parse.',
  (a) => `yaml syntax error: ${a.problem}`,
  'check indentation (spaces, not tabs), quotes and brackets near this position',
);

export const YamlWarning = diag<{ problem: string }>(
  'SVC1011', 'yaml-warning', 'warning',
  'The YAML parser warned about the text; the value read may not be what was meant.',
  (a) => `yaml: ${a.problem}`,
  'rewrite the text so the parser does not need to guess',
);

export const YamlTagUnsupported = diag<{ tag: string }>(
  'SVC1012', 'yaml-tag-unsupported', 'error',
  'A YAML tag outside the YAML 1.2 core schema (`!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!map`, `!!seq`); custom types have no meaning in configuration.',
  (a) => `yaml tag ${q(a.tag)} is not supported`,
  'remove the tag; quote the value if it should be a string',
);

export const YamlComplexKey = diag(
  'SVC1013', 'yaml-complex-key', 'error',
  'A YAML map key that is a list or a map; configuration keys are strings.',
  () => 'a map key must be a string, not a list or a map',
  'use a plain string as the key',
);

export const YamlAliasCycle = diag<{ alias: string }>(
  'SVC1014', 'yaml-alias-cycle', 'error',
  'A YAML alias refers to a node that contains the alias itself, which would be infinitely deep.',
  (a) => `alias ${q(`*${a.alias}`)} refers to a node that contains it`,
  'an alias may only refer to a node outside itself',
);

export const YamlAliasExpansionLimit = diag<{ limit: number }>(
  'SVC1015', 'yaml-alias-expansion-limit', 'error',
  'Resolving YAML aliases would produce more values than svc reads (the "billion laughs" shape).',
  (a) => `resolving aliases produces more than ${a.limit} values`,
  'write the values out, or use fewer nested aliases',
);

export const YamlMergeInvalid = diag(
  'SVC1016', 'yaml-merge-invalid', 'error',
  'A YAML merge key (`<<`) whose value is not a map or a list of maps.',
  () => 'the value of a merge key `<<` must be a map or a list of maps',
  'merge with `<<: *anchor` where the anchor names a map, or quote `"<<"` to use it as a plain key',
);

export const JsonSyntax = diag<{ problem: string }>(
  'SVC1020', 'json-syntax', 'error',
  'The JSON text does not parse. JSON is read strictly: no comments, no trailing commas, double-quoted strings.',
  (a) => `json syntax error: ${a.problem}`,
  'JSON allows no comments or trailing commas; strings and keys use double quotes',
);

export const TomlSyntax = diag<{ problem: string }>(
  'SVC1030', 'toml-syntax', 'error',
  'The TOML text does not parse (TOML 1.0).',
  (a) => `toml syntax error: ${a.problem}`,
  'see https://toml.io/en/v1.0.0; a key may be defined only once',
);

export const PropertiesInvalidEscape = diag<{ escape: string }>(
  'SVC1040', 'properties-invalid-escape', 'error',
  'A `\\u` escape in a `.properties` file that is not followed by four hex digits.',
  (a) => `invalid escape ${q(a.escape)}`,
  'write `\\u` followed by exactly four hex digits, or `\\\\` for a backslash',
);

export const PropertiesInvalidKey = diag<{ key: string; problem: string }>(
  'SVC1041', 'properties-invalid-key', 'error',
  'A `.properties` key that is not a valid path: names separated by `.`, list indices `[0]`, quoted names `["a.b"]`.',
  (a) => `invalid key ${q(a.key)}: ${a.problem}`,
  'write keys like `routes[0].from` or `set_response_headers.X-Frame-Options`; quote a name holding a dot as `["a.b"]`',
);

export const PropertiesKeyConflict = diag<{ key: string; other: string; first: string }>(
  'SVC1042', 'properties-key-conflict', 'error',
  'Two `.properties` keys give one setting different shapes: a value and a map (`a=1`, `a.b=2`), or a map and a list (`a.b`, `a[0]`).',
  (a) => `key ${q(a.key)} conflicts with ${q(a.other)}`,
  (a) => `${q(a.other)} is at ${a.first}; a setting is either a value, a map (\`.name\`) or a list (\`[0]\`)`,
);

export const PropertiesListGap = diag<{ key: string; missing: number }>(
  'SVC1043', 'properties-list-gap', 'error',
  'The indices of a list in a `.properties` file must run 0, 1, 2, … without gaps.',
  (a) => `list ${q(a.key)} has no item ${a.missing}`,
  'number list items from 0 without gaps',
);

export const EnvMapItemInvalid = diag<{ variable: string; item: string }>(
  'SVC1050', 'env-map-item-invalid', 'error',
  'An item of a map-valued environment variable that is not `Name:value`.',
  (a) => `${a.variable} item ${q(a.item)} is not \`Name:value\``,
  'write `Name:value` pairs separated by commas, or a JSON object',
);

export const EnvValueWrongShape = diag<{ variable: string; expected: string; got: string }>(
  'SVC1051', 'env-value-wrong-shape', 'error',
  'An environment variable holds JSON or YAML of the wrong shape, e.g. an object where a list is expected.',
  (a) => `${a.variable} holds ${a.got}; expected ${a.expected}`,
  'lists are written `a,b,c` or as a JSON array; maps as `Name:value,Name:value` or as a JSON object',
);

export const DocumentValueInvalid = diag<{ what: string; got: string }>(
  'SVC1052', 'document-value-invalid', 'error',
  'A `routes` or `policy` value given as text (environment variable or `.properties` value) that is neither YAML/JSON nor base64 of YAML/JSON.',
  (a) => `${a.what} is ${a.got}, not a YAML or JSON list or map (plain or base64)`,
  'give the routes as YAML or JSON text, or as standard base64 of it (`base64 -w0 routes.yaml`)',
);
