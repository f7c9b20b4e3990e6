/**
 * `svc --version`: the version (package.json) and the git revision the build came from
 * (runtime/observe/build-info.ts says where the revision is read), plus the Node version it runs on.
 */
import { buildInfo } from '../runtime/observe/build-info.ts';

/** The one line `svc --version` prints: `svc 0.1.0 (revision 1a2b3c4d5e6f, node 20.19.0)`. */
export function versionLine(): string {
  const b = buildInfo();
  return `svc ${b.version} (revision ${b.revision}, node ${b.nodeVersion})`;
}
