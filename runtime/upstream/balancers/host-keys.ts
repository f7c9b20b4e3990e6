/**
 * The identities consistent-hash balancers hash for each upstream, and a one-entry cache of the
 * table built for the current eligible set.
 */
import type { Upstream } from '../../../compiler/plan/types.ts';
import { upstreamAddress } from '../address.ts';

/**
 * One hash identity per upstream: its `host:port` (as Envoy hashes a host's address). A repeated
 * address gets `#2`, `#3`, … so that two list entries for the same host keep separate ring points.
 */
export function hostKeys(upstreams: readonly Upstream[]): string[] {
  const seen = new Map<string, number>();
  return upstreams.map((u) => {
    const address = upstreamAddress(u);
    const n = (seen.get(address) ?? 0) + 1;
    seen.set(address, n);
    return n === 1 ? address : `${address}#${n}`;
  });
}

/**
 * Remembers the table built for the latest eligible set, so a rebuild happens only when health or
 * ejection changes that set (a rebuild of a large ring or Maglev table costs milliseconds).
 */
export class EligibleCache<T> {
  private key: readonly number[] | undefined;
  private value: T | undefined;

  constructor(private readonly build: (eligible: readonly number[]) => T) {}

  get(eligible: readonly number[]): T {
    if (this.value === undefined || !sameMembers(this.key, eligible)) {
      this.value = this.build(eligible);
      this.key = eligible.slice();
    }
    return this.value;
  }
}

function sameMembers(a: readonly number[] | undefined, b: readonly number[]): boolean {
  if (a === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
