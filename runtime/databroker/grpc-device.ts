/**
 * A {@link DeviceRecord} as the data broker's `Device` message (schemas/proto/svc/databroker/v1/
 * databroker.proto) and back. The public key travels only when asked for: an operator's listing
 * (`svc devices list`) never shows it.
 */
import { checkedDevice, type DeviceRecord, type DeviceType } from '../core/device-store.ts';

/** The `Device` message, as @grpc/proto-loader presents it (runtime/grpc/proto.ts options). */
export interface DeviceMessage {
  credential_id?: string;
  user_id?: string;
  type?: string;
  approved?: boolean;
  counter?: number;
  transports?: string[];
  created_at_ms?: number;
  public_key?: string;
}

/** The message for `record`, with its public key when `withPublicKey`. */
export function deviceMessage(record: DeviceRecord, withPublicKey: boolean): DeviceMessage {
  return {
    credential_id: record.credentialId,
    user_id: record.userId,
    type: record.type,
    approved: record.approved,
    counter: record.counter,
    transports: [...record.transports],
    created_at_ms: record.createdAtMs,
    ...(withPublicKey ? { public_key: record.publicKey } : {}),
  };
}

/**
 * The validated, frozen record in `message` (it must carry its public key). Throws
 * `SVC_ERR_DEVICE_RECORD_INVALID` (core/device-store.ts checkedDevice) for anything malformed.
 */
export function deviceOfMessage(message: DeviceMessage): DeviceRecord {
  return checkedDevice({
    credentialId: message.credential_id ?? '',
    userId: message.user_id ?? '',
    type: (message.type ?? '') as DeviceType,
    publicKey: message.public_key ?? '',
    counter: message.counter ?? 0,
    approved: message.approved ?? false,
    transports: message.transports ?? [],
    createdAtMs: message.created_at_ms ?? 0,
  });
}
