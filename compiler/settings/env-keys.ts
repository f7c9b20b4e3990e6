import type { EnvKeySpec } from '../sources/env.ts';
import { SETTINGS } from './table.ts';

/**
 * How each setting is read from its environment variable (the key in upper case): lists and maps
 * accept their text forms, `ROUTES` and `POLICY` are documents (base64 or plain YAML/JSON).
 * `jwt_claims_headers` (a list or a map) is read as text and shaped by the schema stage.
 */
export function envKeySpecs(): EnvKeySpec[] {
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
