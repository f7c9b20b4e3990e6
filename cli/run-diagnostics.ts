/**
 * A compiler diagnostic as one of `svc run`'s JSON log lines (docs/logging.md): `level` (warn for a
 * warning, error for an error), `code`, `name`, `at` (`file:line:col`, or the environment variable's
 * name), `msg` (the message), and `path` (the setting) and `help` when it has them. Never the source
 * line: the text form masks a secret setting's value there, this form does not carry it at all.
 */
import { formatLocation, type Diagnostic } from '../compiler/index.ts';

export function diagnosticEntry(d: Diagnostic): Record<string, unknown> {
  return {
    level: d.severity === 'error' ? 'error' : 'warn',
    code: d.code,
    name: d.name,
    ...(d.span ? { at: formatLocation(d.span) } : {}),
    ...(d.path !== undefined ? { path: d.path } : {}),
    msg: d.message,
    ...(d.help ? { help: d.help } : {}),
  };
}
