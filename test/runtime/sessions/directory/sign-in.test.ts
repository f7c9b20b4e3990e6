/**
 * A new session's groups with a directory (runtime/sessions/directory/sign-in.ts): the claim's and
 * the last directory read's; the claim's alone, said once, while the store holds no directory read
 * with this account; the claim's when the store does not answer.
 */
import { describe, expect, it } from 'vitest';
import type { PlanSettings } from '../../../../compiler/plan/types.ts';
import { MemoryStore } from '../../../../runtime/databroker/memory-store.ts';
import { directoryRecord } from '../../../../runtime/sessions/directory/record.ts';
import { signInGroups } from '../../../../runtime/sessions/directory/sign-in.ts';
import { snapshot } from '../../../../runtime/sessions/directory/types.ts';

const account = { value: 'x', fingerprint: 'sha256:sign-in' };
const idp = (provider: string, serviceAccount: typeof account | null = account) => ({ provider, serviceAccount }) as unknown as PlanSettings['idp'];
const directory = snapshot([{ id: 'g1', names: ['sre'], members: ['u1', 'oid-1'] }], ['u1', 'oid-1']);

describe('groups at sign-in', () => {
  it('joins the directory groups of the user to the claim groups', async () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    try {
      await store.put(directoryRecord({ provider: 'okta', account: account.fingerprint, readAtMs: Date.now(), snapshot: directory }));
      expect(await signInGroups(store, idp('okta'), { userId: 'u1', groups: ['claim'], claims: {} })).toEqual(['claim', 'g1', 'sre']);
      expect(await signInGroups(store, idp('okta'), { userId: 'u2', groups: ['claim'], claims: {} })).toEqual(['claim']);
      expect(await signInGroups(store, idp('okta', null), { userId: 'u1', groups: ['claim'], claims: {} })).toEqual(['claim']);
      // Another account's or provider's directory is not used.
      expect(await signInGroups(store, idp('okta', { value: 'y', fingerprint: 'sha256:other' }), { userId: 'u1', groups: [], claims: {} })).toEqual([]);
      // Azure: by oid; without one, the claim's.
      await store.put(directoryRecord({ provider: 'azure', account: account.fingerprint, readAtMs: Date.now(), snapshot: directory }));
      expect(await signInGroups(store, idp('azure'), { userId: 'pairwise', groups: [], claims: { oid: 'oid-1' } })).toEqual(['g1', 'sre']);
      expect(await signInGroups(store, idp('azure'), { userId: 'oid-1', groups: [], claims: {} })).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('without a directory in the store: the claim groups, and one warning per plan', async () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const logs: Record<string, unknown>[] = [];
    try {
      const plan = idp('gitlab');
      for (let i = 0; i < 3; i++) expect(await signInGroups(store, plan, { userId: 'u1', groups: ['claim'], claims: {} }, (e) => logs.push(e))).toEqual(['claim']);
      expect(logs).toEqual([expect.objectContaining({ level: 'warn', msg: expect.stringContaining('no directory read with idp_service_account yet') })]);
    } finally {
      await store.close();
    }
  });

  it('a store that does not answer: the claim groups', async () => {
    const failing = { get: async () => Promise.reject(new Error('down')) };
    expect(await signInGroups(failing, idp('okta'), { userId: 'u1', groups: ['claim'], claims: {} })).toEqual(['claim']);
  });
});
