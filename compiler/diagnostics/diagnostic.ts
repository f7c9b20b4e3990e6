import type { Span } from '../source/source-file.ts';
import type { DiagnosticDef, Severity } from './define.ts';

/** One reported problem. `span` locates it; `path` is the config path (`routes[2].from`). */
export interface Diagnostic {
  readonly code: string;
  readonly name: string;
  readonly severity: Severity;
  readonly message: string;
  readonly help: string | undefined;
  readonly span: Span | undefined;
  readonly path: string | undefined;
}

/**
 * The reporting context every stage receives. A stage reports user mistakes here and goes on;
 * it throws only for bugs.
 */
export class Reporter {
  /** Every diagnostic reported, in order. Only `report` adds to it (the error count relies on that). */
  readonly diagnostics: Diagnostic[] = [];
  private errors = 0;

  report<A>(def: DiagnosticDef<A>, span: Span | undefined, args: A, path?: string): void {
    if (def.severity === 'error') this.errors++;
    this.diagnostics.push({
      code: def.code,
      name: def.name,
      severity: def.severity,
      message: def.message(args),
      help: def.help(args),
      span,
      path,
    });
  }

  /** How many errors were reported: asked after every route and policy, so counted as they come. */
  get errorCount(): number {
    return this.errors;
  }
}
