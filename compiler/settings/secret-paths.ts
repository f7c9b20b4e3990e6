import { SETTINGS } from './table.ts';

const SECRET_KINDS = new Set(['secret', 'secret32', 'keyB64']);
const SECRET_KEYS = new Set(SETTINGS.filter((s) => SECRET_KINDS.has(s.kind)).map((s) => s.key));
const SECRET_ROUTE_FIELDS = new Set(['tls_client_key', 'orchestrator_service_account_token']);

/** True when a config path holds a secret, whose value must never be printed. */
export function isSecretPath(path: string): boolean {
  const top = path.split(/[.[]/)[0] ?? '';
  if (SECRET_KEYS.has(top)) return true;
  const field = /^(?:routes|policy)\[\d+\]\.([a-z_]+)/.exec(path)?.[1];
  return field !== undefined && SECRET_ROUTE_FIELDS.has(field);
}
