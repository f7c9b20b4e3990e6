/** Generations built by provisioners: all parts or none, cleanup after the last request, oldest first. */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { PlanEnvelope } from '../../../compiler/plan/types.ts';
import { cleanupGeneration, PlanRefusedError, provisionGeneration, type Generation, type Provisioner, type Provisioners } from '../../../runtime/generation/provision.ts';
import { PlanStore } from '../../../runtime/generation/plan-store.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

const plan = (n: number): PlanEnvelope => compileText(stringify({ ...BASE_SETTINGS, routes: [{ from: 'https://a.example.com', to: `http://up${n}:80`, allow_public_unauthenticated_access: true }] })).plan!;

/** A part that records what happens to it: a label per plan and generation, and its cleanups. */
function recorder(name: string, log: string[], refuse?: (p: PlanEnvelope) => boolean): Provisioner<{ label: string }> {
  let n = 0;
  return {
    name,
    provision: (p, _index, previous, context) => {
      if (refuse?.(p)) throw Object.assign(new Error(`${name} cannot use this plan`), { code: 'SVC_ERR_TEST' });
      if (context.renewal && previous) return previous;
      return { label: `${name}${++n}` };
    },
    cleanup: (part, keep) => {
      log.push(`cleanup ${part.label} keep ${keep?.label ?? '-'}`);
    },
  };
}

type P = { a: { label: string }; b: { label: string } };

describe('provisionGeneration', () => {
  it('builds every part in order, each from the part it replaces', async () => {
    const log: string[] = [];
    const list: Provisioners<P> = { a: recorder('a', log), b: recorder('b', log) };
    const g1 = await provisionGeneration(list, plan(1), undefined);
    const g2 = await provisionGeneration(list, plan(2), g1);
    expect([g1.a.label, g1.b.label, g1.number, g2.a.label, g2.b.label, g2.number]).toEqual(['a1', 'b1', 1, 'a2', 'b2', 2]);
  });

  it('refuses a plan a provisioner throws on, with its coded error as the cause, and cleans up the parts already built', async () => {
    const log: string[] = [];
    const list: Provisioners<P> = { a: recorder('a', log), b: recorder('b', log, (p) => p.body.routes[0]!.action.kind === 'forward' && p.body.routes[0]!.action.upstreams[0]!.host === 'up2') };
    const g1 = await provisionGeneration(list, plan(1), undefined);
    const refused = await provisionGeneration(list, plan(2), g1).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PlanRefusedError);
    expect(refused).toMatchObject({ code: 'SVC_ERR_PLAN_REFUSED', part: 'b', message: 'b cannot use this plan', cause: { code: 'SVC_ERR_TEST' } });
    // The half-built generation's part is released, keeping what the generation in service holds.
    expect(log).toEqual(['cleanup a2 keep a1']);
  });

  it('an unchanged checksum is a renewal: parts that read no file are taken over', async () => {
    const list: Provisioners<P> = { a: recorder('a', []), b: recorder('b', []) };
    const g1 = await provisionGeneration(list, plan(1), undefined);
    const g2 = await provisionGeneration(list, plan(1), g1);
    expect(g2.a).toBe(g1.a);
    expect(g2.index).toBe(g1.index);
  });
});

describe('PlanStore', () => {
  async function store(log: string[]) {
    const list: Provisioners<P> = { a: recorder('a', log), b: recorder('b', log) };
    const s = new PlanStore<P>(await provisionGeneration(list, plan(1), undefined), { retire: (g, next) => void cleanupGeneration(list, g, next) });
    const swap = async (n: number) => s.swap(await provisionGeneration(list, plan(n), s.current));
    return { s, swap };
  }

  it('cleans a replaced generation up after its last request, in reverse provisioning order', async () => {
    const log: string[] = [];
    const { s, swap } = await store(log);
    const g1 = s.acquire();
    await swap(2);
    expect(log).toEqual([]);
    s.release(g1);
    await expect.poll(() => log).toEqual(['cleanup b1 keep b2', 'cleanup a1 keep a2']);
  });

  it('retires generations oldest first: a generation waits for the ones before it', async () => {
    const log: string[] = [];
    const { s, swap } = await store(log);
    const g1: Generation<P> = s.acquire();
    await swap(2);
    await swap(3); // generation 2 has no request, but generation 1 still serves one
    await new Promise((r) => setTimeout(r, 10));
    expect(log).toEqual([]);
    s.release(g1);
    await expect.poll(() => [...log].sort()).toEqual(['cleanup a1 keep a2', 'cleanup a2 keep a3', 'cleanup b1 keep b2', 'cleanup b2 keep b3']);
  });
});
