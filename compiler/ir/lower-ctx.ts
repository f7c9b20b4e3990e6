import type { CompileInput } from '../compile-input.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import type { PathIndex } from '../schema/path-index.ts';
import type { Span } from '../source/source-file.ts';

/** What the lowering stage works with: the reporter, the injected I/O, and where every value came from. */
export interface LowerCtx {
  readonly r: Reporter;
  readonly input: CompileInput;
  /** Config path (`routes[0].from`) → node it was read from. */
  readonly index: PathIndex;
  /** Files read while lowering (certificates, keys), for the plan's watch list. */
  readonly files: Set<string>;
}

/** The span of a config path's value, if known. */
export function spanAt(cx: LowerCtx, path: string): Span | undefined {
  return cx.index.get(path)?.node.span;
}
