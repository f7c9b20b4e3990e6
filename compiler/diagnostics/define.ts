/**
 * Diagnostic definitions. A definition is permanent: its code (`SVC` + 4 digits) and kebab-case name
 * are never renumbered or reused. Ranges: 1xxx sources, 2xxx schema, 3xxx settings and routes,
 * 4xxx policy, 5xxx plan, 6xxx properties files of `svc verify`, 9xxx internal.
 */
export type Severity = 'error' | 'warning';

export interface DiagnosticDef<A = Record<string, never>> {
  readonly code: string;
  readonly name: string;
  readonly severity: Severity;
  /** One line, lower-case, no final period, user values in backticks. */
  readonly message: (args: A) => string;
  /** Advice: how to fix it. */
  readonly help: (args: A) => string | undefined;
  /** What the code means, for docs/diagnostics.md. */
  readonly summary: string;
}

/** Declares a diagnostic; `message` and `help` receive the report's arguments. */
export function diag<A = Record<string, never>>(
  code: string,
  name: string,
  severity: Severity,
  summary: string,
  message: (args: A) => string,
  help?: string | ((args: A) => string | undefined),
): DiagnosticDef<A> {
  if (!/^SVC\d{4}$/.test(code)) throw new Error(`bad diagnostic code ${code}`);
  if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(name)) throw new Error(`bad diagnostic name ${name}`);
  const helpFn = typeof help === 'function' ? help : () => help;
  return { code, name, severity, summary, message, help: helpFn };
}

/** Quotes a user value for a message: backticks, control characters escaped, long values cut. */
export function q(value: unknown): string {
  let s = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  s = s.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (s.length > 120) s = `${s.slice(0, 117)}...`;
  return `\`${s}\``;
}
