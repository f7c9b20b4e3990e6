/**
 * The directory in a split deployment (docs/authentication.md "Groups from the directory"): the
 * data broker role's identity manager reads the directory into its store, and another role (an
 * authenticate service signing users in) reads it through the data broker's gRPC client, as
 * runtime/authn/callback.ts does.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { PlanSettings } from '../../../../compiler/plan/types.ts';
import { MemoryStore } from '../../../../runtime/databroker/memory-store.ts';
import { directoryClient } from '../../../../runtime/sessions/directory/index.ts';
import { mergedGroups, readDirectory } from '../../../../runtime/sessions/directory/record.ts';
import { IdentityManager } from '../../../../runtime/sessions/identity-manager.ts';
import type { IdentityProvider } from '../../../../runtime/sessions/idp.ts';
import { SessionRefresher } from '../../../../runtime/sessions/session-refresher.ts';
import { grpcStore, startBroker, type Broker } from '../../databroker/grpc-support.ts';
import { baseModel, FakeDirectory } from './fake-directory.ts';

let fake: FakeDirectory;
let backing: MemoryStore;
let broker: Broker;
beforeAll(async () => {
  fake = await FakeDirectory.start(baseModel());
  backing = new MemoryStore({ sweepIntervalMs: 0 });
  broker = await startBroker(backing);
});
afterAll(async () => {
  await broker?.stop();
  await backing?.close();
  await fake?.close();
});

it('the data broker role syncs; another role reads the directory over gRPC', async () => {
  const account = { value: fake.account('gitlab'), fingerprint: 'sha256:grpc-directory' };
  const idpSettings = { provider: 'gitlab', providerUrl: null, serviceAccount: account } as unknown as PlanSettings['idp'];
  const directory = { provider: 'gitlab', account, client: directoryClient(idpSettings, (s) => ('value' in s ? s.value : ''))! };
  const idp = { hasUserInfo: async () => false } as unknown as IdentityProvider;
  const clock = { now: Date.now() };
  const m = new IdentityManager({ store: backing, refresher: new SessionRefresher(backing), settings: () => ({ idp, directoryIntervalMs: 600_000, directoryTimeoutMs: 10_000, directory }), now: () => clock.now, directoryDispatcher: fake.dispatcher });
  const client = await grpcStore([broker.url]);
  try {
    expect(await readDirectory(client, 'gitlab', account)).toBeUndefined();
    await m.tick();
    const seen = await readDirectory(client, 'gitlab', account);
    expect(seen).toBeDefined();
    expect(mergedGroups(['from-claim'], seen!.snapshot, '1')).toEqual(['from-claim', '101', 'engineering', '102', 'admins']);
  } finally {
    await m.close();
    await client.close();
  }
});
