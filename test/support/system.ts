/**
 * Tests that need a system package (redis-server, nginx, chromium, …): they skip with a printed
 * reason when it is missing, except under `SVC_TEST_REQUIRE_ALL=1` (set by .ci/run), where a
 * missing package fails the test run instead.
 */
import { execFileSync } from 'node:child_process';
import { describe } from 'vitest';

/** The absolute path of a command, or undefined. */
export function which(command: string): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v "$1"', 'sh', command], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** `describe` when every command exists; otherwise a skipped suite (or a failure under REQUIRE_ALL). */
export function describeWithCommands(commands: readonly string[], name: string, body: () => void): void {
  const missing = commands.filter((c) => which(c) === undefined);
  if (missing.length === 0) {
    describe(name, body);
    return;
  }
  const reason = `needs ${missing.join(', ')} (apt-get install -y ${missing.map(debianPackage).join(' ')})`;
  if (process.env['SVC_TEST_REQUIRE_ALL'] === '1') {
    describe(name, () => {
      throw new Error(`SVC_TEST_REQUIRE_ALL=1 but this suite ${reason}`);
    });
    return;
  }
  console.warn(`skipping "${name}": ${reason}`);
  describe.skip(name, body);
}

function debianPackage(command: string): string {
  return ({ 'redis-server': 'redis-server', nginx: 'nginx', caddy: 'caddy', chromium: 'chromium' } as Record<string, string>)[command] ?? command;
}
