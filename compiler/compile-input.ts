/**
 * What the compiler reads, injected so the compiler stays pure: the same input gives the same plan,
 * byte for byte. No clock, no randomness, no network; files only through `readFile`.
 */
export interface CompileInput {
  /** The config file as named on the command line (relative paths stay relative). */
  readonly configPath?: string;
  /** Environment variables (the upper-case setting keys are read from here). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Reads a file named by the config or the command line, relative to the working directory. */
  readonly readFile: (path: string) => ReadResult;
}

export type ReadResult = { readonly ok: true; readonly data: Buffer } | { readonly ok: false; readonly reason: string };
