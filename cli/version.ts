/**
 * `svc --version`: the release as `MAJOR.MINOR.PATCH+GITHASH` (docs/deploy.md "Installing the package"), and the Node
 * version it runs on. runtime/observe/build-info.ts says where the version and the hash are read
 * (a checkout's git, else the revision recorded when the package was built or packed, else `unknown`).
 */
import { buildInfo } from '../runtime/observe/build-info.ts';

/** The one line `svc --version` prints: `svc 0.1.0+1a2b3c4d5e6f (node 24.21.0)`. */
export function versionLine(): string {
  const b = buildInfo();
  return `svc ${b.release} (node ${b.nodeVersion})`;
}
