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
  readonly diagnostics: Diagnostic[] = [];

  report<A>(def: DiagnosticDef<A>, span: Span | undefined, args: A, path?: string): void {
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

  get errorCount(): number {
    let n = 0;
    for (const d of this.diagnostics) if (d.severity === 'error') n++;
    return n;
  }
}
