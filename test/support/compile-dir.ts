import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readFromDisk } from '../../cli/node-input.ts';
import { compile, type CompileResult } from '../../compiler/compile.ts';
import { lineCol } from '../../compiler/source/source-file.ts';

/** The config file of a case directory: `config.<ext>` (any extension), if any. */
export function configFileOf(dir: string): string | undefined {
  return readdirSync(dir).filter((f) => /^config\.[A-Za-z]+$/.test(f)).sort()[0];
}

/**
 * Compiles a case directory as if svc ran in it: `config.*` is the config file, `env.json` (a JSON
 * object) the environment, and files are read relative to the directory.
 */
export function compileDir(dir: string, envOverride?: Record<string, string>): CompileResult {
  const config = configFileOf(dir);
  const envFile = join(dir, 'env.json');
  const env = envOverride ?? (existsSync(envFile) ? (JSON.parse(readFileSync(envFile, 'utf8')) as Record<string, string>) : {});
  return compile({
    ...(config !== undefined ? { configPath: config } : {}),
    env,
    readFile: (p) => readFromDisk(join(dir, p)),
  });
}

/** A diagnostic as kept in golden files: where, what, and the underlined text. */
export interface GoldenDiagnostic {
  severity: string;
  code: string;
  name: string;
  at: string | null;
  text: string | null;
  message: string;
}

export function goldenDiagnostics(result: CompileResult): GoldenDiagnostic[] {
  return result.diagnostics.map((d) => {
    let at: string | null = null;
    let text: string | null = null;
    if (d.span) {
      if (d.span.source.isEnv) at = d.span.source.name;
      else {
        const { line, column } = lineCol(d.span.source, d.span.start);
        at = `${d.span.source.name}:${line}:${column}`;
        text = d.span.source.text.slice(d.span.start, d.span.end);
        if (text.length > 200) text = `${text.slice(0, 200)}...`;
      }
    }
    return { severity: d.severity, code: d.code, name: d.name, at, text, message: d.message };
  });
}
