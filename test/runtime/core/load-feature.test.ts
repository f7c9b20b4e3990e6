/**
 * runtime/core/load-feature.ts: a feature's library that cannot be loaded is a coded error naming
 * the feature, with the loader's error as its cause; one that loads is handed back as it is.
 */
import { describe, expect, it } from 'vitest';
import { FeatureUnavailableError, loadFeature } from '../../../runtime/core/load-feature.ts';

describe('loadFeature', () => {
  it('hands back the module it loads', async () => {
    const m = await loadFeature('tracing', () => import('node:path'));
    expect(typeof m.join).toBe('function');
  });

  it('turns a failed import into SVC_ERR_FEATURE_UNAVAILABLE naming the feature', async () => {
    // A package no installation has: the dynamic import rejects as a broken install would.
    const missing = 'svc-test-no-such-package';
    const err = await loadFeature('Redis session storage', () => import(missing)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FeatureUnavailableError);
    expect(err).toMatchObject({ code: 'SVC_ERR_FEATURE_UNAVAILABLE', feature: 'Redis session storage' });
    expect((err as Error).message).toMatch(/^Redis session storage needs a library that cannot be loaded \(.*svc-test-no-such-package.*\): svc is installed incompletely, reinstall it$/);
    expect((err as Error).cause).toBeInstanceOf(Error);
  });
});
