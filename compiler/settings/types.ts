/**
 * Kinds of setting values. The kind decides the JSON-schema type (for the schema stage), how an env
 * variable is read (scalar, list, map), and how the value is lowered into the plan.
 */
export type SettingKind =
  | 'string'
  | 'bool'
  | 'uint'
  | 'number'
  | 'duration' // `30s`, `1h45m`, `0` → integer milliseconds
  | 'url' // must carry a scheme and a host
  | 'hostport' // `host:port`, `:port`
  | 'enum'
  | 'list' // list of strings
  | 'map' // map string → string
  | 'path' // a file location, read at compile time
  | 'secret' // a secret string
  | 'secret32' // base64 of exactly 32 bytes
  | 'certB64' // a base64 PEM certificate (cert-or-file: the `_file` key is its own row)
  | 'keyB64' // a base64 PEM private key (secret)
  | 'special'; // lowered by its own code (routes, policy, certificates, headers)

/** One global configuration key (docs/configuration.md "Settings"). */
export interface SettingSpec {
  readonly key: string;
  readonly kind: SettingKind;
  /** The default written as a config value (`'30s'`, `true`), or undefined for none. */
  readonly default?: string | number | boolean | readonly string[];
  readonly values?: readonly string[];
  /** `url` kind: the schemes accepted (any scheme when absent). Lowering and the schema read it. */
  readonly schemes?: readonly string[];
  /** Config-file only: no environment variable. */
  readonly fileOnly?: boolean;
  /** Where the lowered value lives in the plan body, e.g. `server.timeoutReadMs`. */
  readonly plan: string;
  readonly meaning: string;
  /** The key is deprecated: a warning names the replacement. */
  readonly deprecated?: string;
}
