import { lineCol } from '../source/source-file.ts';
import type { Diagnostic } from './diagnostic.ts';

/** One diagnostic as CI systems and editors read it. */
export interface JsonDiagnostic {
  readonly code: string;
  readonly name: string;
  readonly severity: 'error' | 'warning';
  readonly message: string;
  readonly file: string | null;
  readonly line: number | null;
  readonly column: number | null;
  readonly path: string | null;
  readonly help: string | null;
}

export function toJsonDiagnostic(d: Diagnostic): JsonDiagnostic {
  const pos = d.span && !d.span.source.isEnv ? lineCol(d.span.source, d.span.start) : undefined;
  return {
    code: d.code,
    name: d.name,
    severity: d.severity,
    message: d.message,
    file: d.span ? d.span.source.name : null,
    line: pos?.line ?? null,
    column: pos?.column ?? null,
    path: d.path ?? null,
    help: d.help ?? null,
  };
}

/** `{"diagnostics": [...], "checksum": "sha256:..."}`; the checksum only when there are no errors. */
export function renderJson(diagnostics: readonly Diagnostic[], checksum: string | undefined): string {
  const out: { diagnostics: JsonDiagnostic[]; checksum?: string } = { diagnostics: diagnostics.map(toJsonDiagnostic) };
  if (checksum !== undefined) out.checksum = checksum;
  return `${JSON.stringify(out, null, 2)}\n`;
}
