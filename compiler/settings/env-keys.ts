import type { EnvKeySpec } from '../sources/env.ts';
import { REMOVED_KEYS, SETTINGS } from './table.ts';

/**
 * How each setting is read from its environment variable (the key in upper case): lists and maps
 * accept their text forms, `ROUTES` and `POLICY` are documents (base64 or plain YAML/JSON).
 * `jwt_claims_headers` (a list or a map) is read as text and shaped by the schema stage. The
 * variables of removed keys (`HEADERS`, …) are read too, as text, so that the schema stage reports
 * them like the removed keys of a file instead of ignoring them.
 */
export function envKeySpecs(): EnvKeySpec[] {
  const removed = Object.keys(REMOVED_KEYS).map((key): EnvKeySpec => ({ key, kind: 'scalar' }));
  return [...settingSpecs(), ...removed];
}

function settingSpecs(): EnvKeySpec[] {
  return SETTINGS.filter((s) => !s.fileOnly).map((s) => ({
    key: s.key,
    kind:
      s.key === 'routes' || s.key === 'policy'
        ? 'document'
        : s.kind === 'list'
          ? 'list'
          : s.kind === 'map' || s.key === 'set_response_headers'
            ? 'map'
            : 'scalar',
  }));
}
