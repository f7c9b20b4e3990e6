import { RouteMaglevTableSize } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';
import { mapField } from './helpers.ts';

/** Tells whether `n` is prime (trial division: table sizes are at most 5,000,011). */
export function isPrime(n: number): boolean {
  if (!Number.isInteger(n) || n < 2) return false;
  if (n % 2 === 0) return n === 2;
  for (let d = 3; d * d <= n; d += 2) if (n % d === 0) return false;
  return true;
}

/**
 * `route-maglev-table-size`: Maglev's lookup table needs a prime size (each upstream's
 * permutation must visit every slot); the runtime would refuse the route. Reported at the value.
 */
export const routeMaglevTableSize: ValidationRule = {
  reports: [RouteMaglevTableSize],
  check(input, r) {
    for (const route of input.routes) {
      const size = mapField(route.raw, 'maglev_lb_config')?.['table_size'];
      if (typeof size !== 'number' || isPrime(size)) continue;
      const path = `${route.path}.maglev_lb_config.table_size`;
      r.report(RouteMaglevTableSize, spanOf(input, path), { size }, path);
    }
  },
};
