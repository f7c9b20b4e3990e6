/**
 * Plans for listener tests, compiled by the real compiler from configs that name real files in a
 * temporary directory (the runtime reads them from disk, the compiler from the same contents).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { PlanBody } from '../../../compiler/plan/types.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

export class TempFiles {
  readonly dir = mkdtempSync(join(tmpdir(), 'svc-listen-'));
  readonly #written = new Map<string, string>();

  /** Writes `content` to `name` in the directory; returns the absolute path. */
  write(name: string, content: string): string {
    const p = join(this.dir, name);
    writeFileSync(p, content);
    this.#written.set(p, content);
    return p;
  }

  get contents(): Record<string, string> {
    return Object.fromEntries(this.#written);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Compiles settings and routes (files from `files` as written so far) into a plan body. */
export function compileBody(settings: Record<string, unknown>, routes: unknown[], files: TempFiles): PlanBody {
  const res = compileText(stringify({ ...BASE_SETTINGS, insecure_server: false, ...settings, routes }), 'config.yaml', {}, files.contents);
  if (!res.plan) throw new Error(res.diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.code} ${d.message}`).join('\n'));
  return res.plan.body;
}

export const open = { allow_public_unauthenticated_access: true };
