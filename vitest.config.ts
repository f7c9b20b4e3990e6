import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Two test files at a time (vitest's default on a 2-core machine is one). Files running side by
    // side get their ports from disjoint blocks (test/support/ports.ts) or listen on port 0.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: process.env['CI'] ? ['default', 'json'] : ['default'],
    outputFile: { json: 'test-report.json' },
  },
});
