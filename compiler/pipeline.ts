/**
 * The compiler's architecture as a named, ordered stage table (DESIGN.md §1). Each stage is a
 * function of its input and the reporting context; stages report user mistakes and never throw for
 * them. `compile()` in compile.ts runs them in this order.
 */
export const STAGES = [
  { n: 1, name: 'read', does: 'read the config file through the injected fs; env vars are sources too' },
  { n: 2, name: 'parse', does: 'parse each source (YAML, JSON, TOML, properties, env) into one tree with spans' },
  { n: 3, name: 'merge', does: 'merge layers: defaults < file < env, provenance kept per value' },
  { n: 4, name: 'schema', does: 'drop removed keys, coerce untyped text, check the JSON schema (ajv)' },
  { n: 5, name: 'lower', does: 'lower settings and routes to the typed IR: ms, parsed URLs, secrets as refs, files read' },
  { n: 6, name: 'policy', does: 'parse policies (documents and text syntax) and desugar legacy options into the IR' },
  { n: 7, name: 'validate', does: 'run every validation rule; all errors are reported' },
  { n: 8, name: 'emit', does: 'emit the plan body and its source map' },
  { n: 9, name: 'consistency', does: 'check cross-references of the emitted plan' },
  { n: 10, name: 'seal', does: 'canonical JSON, checksum, deep freeze' },
] as const;
