import { lineCol, lineText, formatLocation } from '../source/source-file.ts';
import type { Diagnostic } from './diagnostic.ts';

/**
 * Renders diagnostics like a compiler (docs/architecture.md §7): `file:line:col: severity CODE name: message`, the
 * source line, a caret line under the span, then `help:`. Environment variables are named, never
 * shown: their values may be secrets. Spans over secret settings are masked in the source line.
 */
export function renderText(diagnostics: readonly Diagnostic[], isSecretPath: (path: string) => boolean = () => false): string {
  const out: string[] = [];
  for (const d of diagnostics) {
    const where = d.span ? `${formatLocation(d.span)}: ` : '';
    out.push(`${where}${d.severity} ${d.code} ${d.name}: ${d.message}`);
    if (d.span && !d.span.source.isEnv) {
      const { line, column } = lineCol(d.span.source, d.span.start);
      let text = lineText(d.span.source, d.span.start);
      const width = Math.max(1, Math.min(d.span.end - d.span.start, text.length - (column - 1)));
      if (d.path !== undefined && isSecretPath(d.path)) {
        text = text.slice(0, column - 1) + '*'.repeat(Math.min(8, width)) + text.slice(column - 1 + width);
      }
      const gutter = String(line).length + 3;
      out.push(`${String(line).padStart(gutter)} | ${text}`);
      out.push(`${' '.repeat(gutter)} | ${' '.repeat(column - 1)}${'^'.repeat(d.path !== undefined && isSecretPath(d.path) ? Math.min(8, width) : width)}`);
    }
    if (d.help) out.push(`  help: ${d.help}`);
  }
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}

/** `N errors, M warnings`. */
export function summaryLine(diagnostics: readonly Diagnostic[]): string {
  const e = diagnostics.filter((d) => d.severity === 'error').length;
  const w = diagnostics.length - e;
  return `${e} error${e === 1 ? '' : 's'}, ${w} warning${w === 1 ? '' : 's'}`;
}
