/**
 * The svc command line. Thin: parses arguments, calls the compiler (and later the runtime), prints.
 * Exit codes: 0 success (warnings allowed), 1 errors in the configuration, 2 usage or I/O error.
 */
import { Command, CommanderError, Option } from 'commander';
import { compileCommand } from './compile-command.ts';

/** Commander reads `-config` as bundled short flags; the spec's flag is single-dash, so rewrite it. */
function normalizeArgs(argv: readonly string[]): string[] {
  return argv.map((a) => (a === '-config' ? '--config' : a.startsWith('-config=') ? `--config=${a.slice(8)}` : a));
}

export async function main(argv: readonly string[], io: { out: (s: string) => void; err: (s: string) => void } = {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
}): Promise<number> {
  let code = 0;
  const program = new Command('svc')
    .description('svc: an identity-aware reverse proxy, compiled from config into a checksummed plan')
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err });
  program
    .command('compile')
    .description('compile a configuration into a plan, reporting every mistake with file:line:col')
    .addOption(new Option('-c, --config <file>', 'config file (YAML, JSON, TOML or .properties); also -config'))
    .option('--check', 'only check: write nothing')
    .option('-o, --output <plan>', 'write the plan here (mode 0600); default: standard output')
    .addOption(new Option('--format <format>', 'diagnostics format').choices(['text', 'json']).default('text'))
    .option('--summary', 'print a summary of the plan (routes, services, checksum) instead of the plan')
    .action((opts: { config?: string; check?: boolean; output?: string; format: 'text' | 'json'; summary?: boolean }) => {
      code = compileCommand(opts, io);
    });
  try {
    await program.parseAsync(normalizeArgs(argv), { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    throw e;
  }
  return code;
}
