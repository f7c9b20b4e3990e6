import { readFileSync } from 'node:fs';
import type { CompileInput, ReadResult } from '../compiler/index.ts';

/** Reads a file from disk for the compiler, turning errors into a reason instead of a throw. */
export function readFromDisk(path: string): ReadResult {
  try {
    return { ok: true, data: readFileSync(path) };
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const reason = err.code === 'ENOENT' ? 'no such file' : err.code === 'EACCES' ? 'permission denied' : err.code === 'EISDIR' ? 'is a directory' : err.message;
    return { ok: false, reason };
  }
}

/** The compiler input of a CLI run: the named config file, the process environment, the disk. */
export function nodeInput(configPath: string | undefined, env: NodeJS.ProcessEnv = process.env): CompileInput {
  return { ...(configPath !== undefined ? { configPath } : {}), env, readFile: readFromDisk };
}
