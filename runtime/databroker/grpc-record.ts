/**
 * A {@link SessionRecord} as the data broker's `Session` message (schemas/proto/svc/databroker/v1/
 * databroker.proto) and back. Claims travel as JSON bytes, so every claim value comes back exactly
 * as the identity provider sent it. Absent optional fields stay absent.
 */
import { deepFreeze } from '../../compiler/plan/deep-freeze.ts';
import { recordJson } from './record-check.ts';
import { SessionStoreError, type SessionRecord } from '../core/session-store.ts';

/** The `Session` message, as @grpc/proto-loader presents it (runtime/grpc/proto.ts options). */
export interface SessionMessage {
  id?: string;
  user_id?: string;
  email?: string;
  groups?: string[];
  claims_json?: Buffer;
  id_token?: string;
  access_token?: string;
  refresh_token?: string;
  access_token_expires_at_ms?: number;
  expires_at_ms?: number;
  created_at_ms?: number;
  device_credential_id?: string;
}

/**
 * The message for `record`, after the checks every store applies (a record the memory store refuses
 * is refused here, before it is sent). Throws `SVC_ERR_SESSION_RECORD_INVALID`.
 */
export function sessionMessage(record: SessionRecord): SessionMessage {
  recordJson(record);
  if (typeof record.claims !== 'object' || record.claims === null || Array.isArray(record.claims)) throw new SessionStoreError('SVC_ERR_SESSION_RECORD_INVALID', 'record claims must be an object');
  for (const field of ['email', 'idToken', 'accessToken', 'refreshToken', 'deviceCredentialId'] as const) {
    const v = record[field];
    if (v !== undefined && typeof v !== 'string') throw new SessionStoreError('SVC_ERR_SESSION_RECORD_INVALID', `record ${field} must be a string`);
  }
  if (record.accessTokenExpiresAtMs !== undefined && !Number.isSafeInteger(record.accessTokenExpiresAtMs)) throw new SessionStoreError('SVC_ERR_SESSION_RECORD_INVALID', 'record accessTokenExpiresAtMs must be a safe integer');
  return {
    id: record.id,
    user_id: record.userId,
    groups: [...record.groups],
    claims_json: Buffer.from(JSON.stringify(record.claims), 'utf8'),
    expires_at_ms: record.expiresAtMs,
    created_at_ms: record.createdAtMs,
    ...(record.email !== undefined ? { email: record.email } : {}),
    ...(record.idToken !== undefined ? { id_token: record.idToken } : {}),
    ...(record.accessToken !== undefined ? { access_token: record.accessToken } : {}),
    ...(record.refreshToken !== undefined ? { refresh_token: record.refreshToken } : {}),
    ...(record.accessTokenExpiresAtMs !== undefined ? { access_token_expires_at_ms: record.accessTokenExpiresAtMs } : {}),
    ...(record.deviceCredentialId !== undefined ? { device_credential_id: record.deviceCredentialId } : {}),
  };
}

/** The deep-frozen record in `message`. Throws `SVC_ERR_SESSION_RECORD_INVALID` when its claims are not a JSON object. */
export function recordOfMessage(message: SessionMessage): SessionRecord {
  let claims: unknown = {};
  if (message.claims_json !== undefined && message.claims_json.length > 0) {
    try {
      claims = JSON.parse(message.claims_json.toString('utf8'));
    } catch (err) {
      throw new SessionStoreError('SVC_ERR_SESSION_RECORD_INVALID', 'session claims_json is not JSON', { cause: err });
    }
  }
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) throw new SessionStoreError('SVC_ERR_SESSION_RECORD_INVALID', 'session claims_json is not a JSON object');
  const record: { -readonly [K in keyof SessionRecord]: SessionRecord[K] } = {
    id: message.id ?? '',
    userId: message.user_id ?? '',
    groups: message.groups ?? [],
    claims: claims as Record<string, unknown>,
    expiresAtMs: message.expires_at_ms ?? 0,
    createdAtMs: message.created_at_ms ?? 0,
  };
  if (message.email !== undefined) record.email = message.email;
  if (message.id_token !== undefined) record.idToken = message.id_token;
  if (message.access_token !== undefined) record.accessToken = message.access_token;
  if (message.refresh_token !== undefined) record.refreshToken = message.refresh_token;
  if (message.access_token_expires_at_ms !== undefined) record.accessTokenExpiresAtMs = message.access_token_expires_at_ms;
  if (message.device_credential_id !== undefined) record.deviceCredentialId = message.device_credential_id;
  return deepFreeze(record);
}
