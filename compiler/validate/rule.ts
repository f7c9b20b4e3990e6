import type { ReadResult } from '../compile-input.ts';
import type { DiagnosticDef } from '../diagnostics/define.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import type { PathIndex } from '../schema/path-index.ts';
import type { PlanBody, Route } from '../plan/types.ts';
import type { Span } from '../source/source-file.ts';

/** A route as written (after the schema check) next to its lowered form. */
export interface RouteInput {
  readonly raw: Readonly<Record<string, unknown>>;
  /** Config path: `routes[3]`, or `policy[0]` for the deprecated key. */
  readonly path: string;
  readonly lowered: Route | undefined;
}

/** What a validation rule sees: the lowered plan body, the config as written, and where things are. */
export interface RuleInput {
  readonly body: PlanBody;
  readonly config: Readonly<Record<string, unknown>>;
  readonly routes: readonly RouteInput[];
  readonly index: PathIndex;
  /**
   * The compiler's file reader, for a rule that checks the content of a secret `_file` (lowering
   * already read it; the plan keeps only a reference). Absent in tests that build an input by hand.
   */
  readonly readFile?: (path: string) => ReadResult;
}

/**
 * One validation rule (stage 7), in a file named after its diagnostic. Rules only report; all of
 * them run, so every error is reported in one pass.
 */
export interface ValidationRule {
  /** The diagnostics this rule may report (for the registry and the fixture test). */
  readonly reports: readonly DiagnosticDef<never>[];
  check(input: RuleInput, r: Reporter): void;
}

/** The value span of a config path, falling back to its parent's. */
export function spanOf(input: RuleInput, path: string): Span | undefined {
  for (let p = path; p !== ''; p = p.replace(/(\.[^.[\]]+|\[\d+\])$/, '')) {
    const loc = input.index.get(p);
    if (loc) return loc.node.span;
    if (!/(\.[^.[\]]+|\[\d+\])$/.test(p)) break;
  }
  return undefined;
}

/** The key span of a config path (where `key:` is written), falling back to its value's. */
export function keySpanOf(input: RuleInput, path: string): Span | undefined {
  return input.index.get(path)?.keySpan ?? spanOf(input, path);
}
