/** What a process remembers of session versions (redis-seen.ts): it never goes down, and it lapses with the record. */
import { describe, expect, it } from 'vitest';
import { SeenVersions } from '../../../runtime/databroker/redis-seen.ts';

describe('SeenVersions', () => {
  it('keeps the newest version: an older one changes nothing, a revocation at the same version stays', () => {
    const s = new SeenVersions();
    s.raise('k', 10, false, 1_000, 0);
    s.raise('k', 9, true, 5_000, 0);
    expect(s.get('k', 0)).toEqual({ version: 10, revoked: false, exp: 1_000 });
    s.raise('k', 12, true, 900, 0);
    expect(s.get('k', 0)).toEqual({ version: 12, revoked: true, exp: 1_000 });
    s.raise('k', 12, false, 2_000, 0);
    expect(s.get('k', 0)).toEqual({ version: 12, revoked: true, exp: 2_000 });
  });

  it('forgets a key when its record would have expired, lazily and by the sweep', () => {
    const s = new SeenVersions();
    s.raise('k', 1, true, 100, 0);
    expect(s.get('k', 99)?.revoked).toBe(true);
    expect(s.get('k', 100)).toBeUndefined();
    for (let i = 0; i < 5_000; i++) s.raise(`old-${i}`, 1, false, 50, 0);
    for (let i = 0; i < 5_000; i++) s.raise(`new-${i}`, 1, false, 10_000, 60);
    expect(s.size).toBeLessThan(10_000);
  });
});
