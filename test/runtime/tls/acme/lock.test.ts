import { mkdtempSync, rmSync, utimesSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tryLock } from '../../../../runtime/tls/acme/lock.ts';

describe('the per-name lock of a shared autocert directory', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-lock-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('has one holder at a time, and is free again after release', () => {
    const path = join(dir, 'a.lock');
    const a = tryLock(path);
    expect(a).toBeDefined();
    expect(tryLock(path)).toBeUndefined();
    a!.release();
    expect(existsSync(path)).toBe(false);
    const b = tryLock(path);
    expect(b).toBeDefined();
    b!.release();
  });

  it('is taken over when its holder stopped touching it, and the old holder then releases nothing', () => {
    const path = join(dir, 'b.lock');
    const dead = tryLock(path, 1_000)!;
    const old = new Date(Date.now() - 10_000);
    utimesSync(path, old, old);
    const next = tryLock(path, 1_000);
    expect(next).toBeDefined();
    dead.release();
    expect(existsSync(path)).toBe(true);
    expect(tryLock(path, 1_000)).toBeUndefined();
    next!.release();
  });
});
