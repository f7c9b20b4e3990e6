/** Node TLS options for a probe, built from `ProbeTls` with absent fields left out. */
import type { ConnectionOptions } from 'node:tls';
import type { ProbeTls } from './types.ts';

/** The `node:tls` connection options for `tls` (only the fields that are set). */
export function tlsConnectionOptions(tls: ProbeTls): ConnectionOptions {
  const options: ConnectionOptions = {};
  if (tls.ca !== undefined) options.ca = tls.ca;
  if (tls.cert !== undefined) options.cert = tls.cert;
  if (tls.key !== undefined) options.key = tls.key;
  if (tls.servername !== undefined) options.servername = tls.servername;
  if (tls.rejectUnauthorized !== undefined) options.rejectUnauthorized = tls.rejectUnauthorized;
  return options;
}
