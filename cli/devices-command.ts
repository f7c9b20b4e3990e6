/**
 * `svc devices list|approve|revoke` (docs/authentication.md "Devices"): an operator's view of the
 * registered devices, through the data broker's gRPC interface with the service credential derived
 * from `shared_secret` (docs/grpc.md), as every svc service talks to it. The config (or plan) gives
 * the data broker URLs, the secret and the TLS settings; `--databroker` names another URL.
 */
import { GrpcClient } from '../runtime/grpc/client.ts';
import { databrokerClientTls, planCredentialKey } from '../runtime/grpc/plan-options.ts';
import { DATABROKER_SERVICE, databrokerService } from '../runtime/grpc/proto.ts';
import { loadPlanInput } from './plan-input.ts';

export interface DevicesOptions {
  readonly config?: string;
  /** A data broker URL instead of the plan's (`http://127.0.0.1:5443`). */
  readonly databroker?: string;
  /** `list`: only this user's devices. */
  readonly user?: string;
  readonly format?: 'text' | 'json';
}

interface DeviceMessage {
  credential_id?: string;
  user_id?: string;
  type?: string;
  approved?: boolean;
  counter?: number | string;
  transports?: string[];
  created_at_ms?: number | string;
}

/** Runs one action; resolves the exit code (0 done, 1 no such device, 2 bad invocation or the data broker failed). */
export async function devicesCommand(action: string, credentialId: string | undefined, opts: DevicesOptions, io: { out: (s: string) => void; err: (s: string) => void }, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (action !== 'list' && action !== 'approve' && action !== 'revoke') {
    io.err(`error: unknown action \`${action}\`: list, approve or revoke\n`);
    return 2;
  }
  if (action !== 'list' && (credentialId === undefined || credentialId === '')) {
    io.err(`error: \`svc devices ${action}\` needs the device's credential id (see \`svc devices list\`)\n`);
    return 2;
  }
  if (opts.config === undefined) {
    io.err('error: -config <file> is required (the data broker URL, shared_secret and TLS settings come from it)\n');
    return 2;
  }
  const input = loadPlanInput(opts.config, env);
  if (!input.ok) {
    io.err(input.message);
    return 2;
  }
  const settings = input.plan.body.settings;
  let client: GrpcClient;
  try {
    client = new GrpcClient(DATABROKER_SERVICE, databrokerService(), {
      urls: opts.databroker !== undefined ? [opts.databroker] : settings.databroker.serviceUrls,
      credentialKey: planCredentialKey(settings),
      tls: databrokerClientTls(settings),
      timeoutMs: settings.grpc.clientTimeoutMs,
      dnsRoundRobin: settings.grpc.clientDnsRoundRobin,
    });
  } catch (e) {
    io.err(`error: ${(e as Error).message}\n`);
    return 2;
  }
  try {
    if (action === 'list') {
      const res = await client.unary<{ user_id: string }, { devices?: DeviceMessage[] }>('ListDevices', { user_id: opts.user ?? '' });
      const devices = (res.devices ?? []).map((d) => ({
        credentialId: d.credential_id ?? '',
        user: d.user_id ?? '',
        type: d.type ?? '',
        approved: d.approved === true,
        counter: Number(d.counter ?? 0),
        transports: d.transports ?? [],
        createdAt: new Date(Number(d.created_at_ms ?? 0)).toISOString(),
      }));
      devices.sort((a, b) => (a.user < b.user ? -1 : a.user > b.user ? 1 : a.createdAt < b.createdAt ? -1 : 1));
      if (opts.format === 'json') io.out(`${JSON.stringify({ devices }, null, 2)}\n`);
      else if (devices.length === 0) io.out('no registered devices\n');
      else for (const d of devices) io.out(`${d.credentialId}  ${d.user}  ${d.type}  ${d.approved ? 'approved' : 'pending'}  counter ${d.counter}  registered ${d.createdAt}\n`);
      return 0;
    }
    const res = await client.unary<{ credential_id: string }, { value?: boolean }>(action === 'approve' ? 'ApproveDevice' : 'RevokeDevice', { credential_id: credentialId! });
    if (res.value !== true) {
      io.err(`error: no device \`${credentialId}\`\n`);
      return 1;
    }
    io.out(`${action === 'approve' ? 'approved' : 'revoked'} ${credentialId}\n`);
    return 0;
  } catch (e) {
    io.err(`error: the data broker did not answer: ${(e as Error).message}\n`);
    return 2;
  } finally {
    client.close();
  }
}
