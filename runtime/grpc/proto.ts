/**
 * Loads the published .proto files (schemas/proto/) at run time with @grpc/proto-loader: no
 * generated code, so the published interface is the one svc runs. Field names keep the .proto's
 * snake_case; int64 values come as JS numbers (svc's are all ms timestamps, safe integers); `bytes`
 * as Buffers; unset fields are absent (`defaults: false`), so readers supply the defaults.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/** The directory holding `svc/…/*.proto` (the include root). */
const PROTO_ROOT = fileURLToPath(new URL('../../schemas/proto/', import.meta.url));

const LOAD_OPTIONS: protoLoader.Options = { keepCase: true, longs: Number, enums: String, bytes: Buffer, defaults: false, oneofs: true, includeDirs: [PROTO_ROOT] };

/** The fully qualified name of the data broker service. */
export const DATABROKER_SERVICE = 'svc.databroker.v1.DataBroker';

let databroker: grpc.ServiceDefinition | undefined;

/** The data broker's service definition (loaded once per process). */
export function databrokerService(): grpc.ServiceDefinition {
  if (databroker === undefined) {
    const definition = protoLoader.loadSync('svc/databroker/v1/databroker.proto', LOAD_OPTIONS);
    databroker = definition[DATABROKER_SERVICE] as grpc.ServiceDefinition;
  }
  return databroker;
}

/** The fully qualified name of the authorize service. */
export const AUTHORIZE_SERVICE = 'svc.authorize.v1.Authorize';

let authorize: grpc.ServiceDefinition | undefined;

/** The authorize service's definition (loaded once per process). */
export function authorizeService(): grpc.ServiceDefinition {
  if (authorize === undefined) {
    const definition = protoLoader.loadSync('svc/authorize/v1/authorize.proto', LOAD_OPTIONS);
    authorize = definition[AUTHORIZE_SERVICE] as grpc.ServiceDefinition;
  }
  return authorize;
}
