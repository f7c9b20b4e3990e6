/**
 * The svc command line. Thin: parses arguments, calls the compiler or the runtime, prints. Each
 * command's module is loaded only when that command runs, so `svc run` workers never load the
 * compiler.
 * Exit codes: 0 success (warnings allowed), 1 errors in the configuration, 2 usage or I/O error.
 */
import { Command, CommanderError, Option } from 'commander';
import type { ExplainOptions } from './explain-command.ts';

/** Commander reads `-config` as bundled short flags; the documented flag is single-dash, so rewrite it. */
function normalizeArgs(argv: readonly string[]): string[] {
  return argv.map((a) => (a === '-config' ? '--config' : a.startsWith('-config=') ? `--config=${a.slice(8)}` : a));
}

/** A `--budget` in ms (default as `svc diff`'s), or undefined after saying why it is not a duration. */
async function budgetOf(text: string | undefined, command: string, io: { err: (s: string) => void }): Promise<number | undefined> {
  const { parseBudget, DEFAULT_BUDGET_MS } = await import('./diff-command.ts');
  if (text === undefined) return DEFAULT_BUDGET_MS;
  const ms = parseBudget(text);
  if (ms === undefined || ms <= 0) io.err(`${command}: --budget ${JSON.stringify(text)} is not a duration (30s, 500ms, 2m)\n`);
  return ms === undefined || ms <= 0 ? undefined : ms;
}

export async function main(argv: readonly string[], io: { out: (s: string) => void; err: (s: string) => void } = {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
}): Promise<number> {
  let code = 0;
  const program = new Command('svc')
    .description('svc: an identity-aware reverse proxy, compiled from config into a checksummed plan')
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .option('-V, --version', 'print the version and git revision');
  // Only `svc --version` (or `-V`) alone: a command's own options are never taken for it.
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V')) {
    const { versionLine } = await import('./version.ts');
    io.out(`${versionLine()}\n`);
    return 0;
  }
  program
    .command('compile')
    .description('compile a configuration into a plan, reporting every mistake with file:line:col')
    .addOption(new Option('-c, --config <file>', 'config file (YAML, JSON, TOML or .properties); also -config'))
    .option('--check', 'only check: write nothing')
    .option('-o, --output <plan>', 'write the plan here (mode 0600); default: standard output, with --format text')
    .addOption(new Option('--format <format>', 'diagnostics format').choices(['text', 'json']).default('text'))
    .option('--summary', 'print a summary of the plan (checksum, listeners, routes) instead of the plan')
    .option('--verify <properties>', 'with --check: prove the properties of this file for the plan (as svc verify)')
    .option('--budget <duration>', 'with --verify: time budget of each property (30s, 500ms, 2m; default 30s)')
    .action(async (opts: { config?: string; check?: boolean; output?: string; format: 'text' | 'json'; summary?: boolean; verify?: string; budget?: string }) => {
      const { compileCommand } = await import('./compile-command.ts');
      if (opts.verify === undefined) {
        if (opts.budget !== undefined) {
          io.err('svc compile: --budget goes with --verify\n');
          code = 2;
          return;
        }
        code = compileCommand(opts, io);
        return;
      }
      if (!opts.check || opts.format !== 'text' || opts.output !== undefined || opts.summary) {
        io.err('svc compile: --verify goes with --check alone (for JSON output, use svc verify --format json)\n');
        code = 2;
        return;
      }
      const budgetMs = await budgetOf(opts.budget, 'svc compile', io);
      if (budgetMs === undefined) {
        code = 2;
        return;
      }
      let plan: import('../compiler/plan/types.ts').PlanEnvelope | undefined;
      code = compileCommand(opts, io, (p) => (plan = p));
      if (code !== 0 || plan === undefined) return;
      const { verifyPlan } = await import('./verify-command.ts');
      code = await verifyPlan(plan, opts.config ?? 'the config', opts.verify, { format: 'text', budgetMs }, io);
    });
  program
    .command('explain')
    .description('explain what svc decides for one request: route, policy rules and leaves, verdict, upstream or redirect')
    .argument('[plan]', 'config or plan file (instead of -config)')
    .addOption(new Option('-c, --config <file>', 'config file (YAML, JSON, TOML or .properties) or plan; also -config'))
    .requiredOption('--url <url>', 'the request URL: scheme, host and target as the client sends them (not normalized)')
    .option('-X, --method <method>', 'request method', 'GET')
    .option('-H, --header <header>', "request header 'Name: value' (repeatable)", (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--identity <json>', 'signed-in user as JSON ({"user","email","groups","claims"}) or @file.json; default anonymous')
    .option('--peer <addr>', 'TCP peer address', '127.0.0.1')
    .option('--time <iso>', 'request time (ISO 8601) for date and time criteria; default now')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json']).default('text'))
    .action(async (plan: string | undefined, opts: ExplainOptions) => {
      const { explainCommand } = await import('./explain-command.ts');
      code = explainCommand(plan, opts, io);
    });
  program
    .command('test')
    .description('run policy tests (YAML files of requests and expected decisions) and report rule coverage')
    .argument('<files...>', 'policy test files')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json']).default('text'))
    .action(async (files: string[], opts: { format: 'text' | 'json' }) => {
      const { testCommand } = await import('./test-command.ts');
      code = testCommand(files, opts, io);
    });
  program
    .command('diff')
    .description('compare two plans (config or plan files): access changes, flags, routes and settings')
    .argument('<old>', 'the old config or plan file')
    .argument('<new>', 'the new config or plan file')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json']).default('text'))
    .option('--budget <duration>', 'time budget of the exact check (30s, 500ms, 2m; default 30s)')
    .option('--no-exact', 'sampling only: skip the exact check')
    .option('--replay <logs...>', 'access logs of svc run (plain or gzip, rotated files too): decide each recorded request under both plans; give it last, it takes every argument after it')
    .option('--progress', "show replay's progress on standard error (default: only on a terminal outside CI)")
    .action(async (oldPath: string, newPath: string, opts: { format: 'text' | 'json'; budget?: string; exact: boolean; replay?: string[]; progress?: boolean }) => {
      const { diffCommand, parseBudget, DEFAULT_BUDGET_MS } = await import('./diff-command.ts');
      const budgetMs = opts.budget === undefined ? DEFAULT_BUDGET_MS : parseBudget(opts.budget);
      if (budgetMs === undefined) {
        io.err(`svc diff: --budget ${JSON.stringify(opts.budget)} is not a duration (30s, 500ms, 2m)\n`);
        code = 2;
        return;
      }
      const { progressMode } = await import('./diff/replay/progress.ts');
      const progress = progressMode(opts.progress, process.stderr, process.env);
      code = await diffCommand(oldPath, newPath, { format: opts.format, budgetMs: opts.exact ? budgetMs : null, ...(opts.replay ? { replay: opts.replay, progress } : {}) }, io);
    });
  program
    .command('verify')
    .description('prove properties of a properties file for the compiled plan, or print a confirmed counterexample')
    .argument('<properties>', 'the properties file (YAML, docs/verify.md)')
    .addOption(new Option('-c, --config <file>', 'config file (YAML, JSON, TOML or .properties) or plan; also -config'))
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json']).default('text'))
    .option('--budget <duration>', 'time budget of each property (30s, 500ms, 2m; default 30s)')
    .action(async (properties: string, opts: { config?: string; format: 'text' | 'json'; budget?: string }) => {
      const budgetMs = await budgetOf(opts.budget, 'svc verify', io);
      if (budgetMs === undefined) {
        code = 2;
        return;
      }
      const { verifyCommand } = await import('./verify-command.ts');
      code = await verifyCommand(opts.config, properties, { format: opts.format, budgetMs }, io);
    });
  program
    .command('run')
    .description('serve a config (compiled) or a plan, reloading on change')
    .argument('[file]', 'config or plan file (instead of -config)')
    .addOption(new Option('-c, --config <file>', 'config file to compile and watch; also -config'))
    .option('--listen <host:port>', "listen here instead of the plan's address")
    .option('--grpc-listen <host:port>', "serve gRPC here instead of the plan's grpc_address (port 0: any free port)")
    .option('--workers <n>', 'worker processes sharing the listener (default: one per core; 1: this process)')
    .option('--drain-timeout <seconds>', 'on SIGTERM/SIGINT, how long requests in flight may take to finish before they are cut (default 25)')
    .option('--shutdown-delay <seconds>', 'on SIGTERM/SIGINT, how long svc keeps accepting connections, readiness failing, before the drain starts (default 5; 0: none)')
    .option('--shadow <file>', 'a candidate plan or config decided beside the served one: its differing decisions are logged (access line `shadow`) and counted, never enforced (all-in-one only)')
    .option('--store-outage-grace <seconds>', 'while the session store is unreachable, how long past its cache entry a session this process verified is still served (default 30; 0: off; at most 600)')
    .addOption(new Option('--expose-checksum', 'test mode: name the plan checksum in every response').hideHelp())
    .action(async (file: string | undefined, opts: { config?: string; listen?: string; grpcListen?: string; exposeChecksum?: boolean; workers?: string; drainTimeout?: string; shutdownDelay?: string; storeOutageGrace?: string; shadow?: string }) => {
      const { runCommand } = await import('./run-command.ts');
      code = await runCommand(file, opts, io);
    });
  program
    .command('devices')
    .description('list, approve or revoke registered devices (WebAuthn) through the data broker')
    .argument('<action>', 'list, approve or revoke')
    .argument('[credential-id]', 'the device (approve, revoke)')
    .addOption(new Option('-c, --config <file>', 'config file or plan: data broker URL, shared_secret, TLS; also -config'))
    .option('--databroker <url>', "the data broker's gRPC URL instead of the config's")
    .option('--user <id>', 'list: only this user\'s devices')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json']).default('text'))
    .action(async (action: string, credentialId: string | undefined, opts: { config?: string; databroker?: string; user?: string; format: 'text' | 'json' }) => {
      const { devicesCommand } = await import('./devices-command.ts');
      code = await devicesCommand(action, credentialId, opts, io);
    });
  program
    .command('tcp')
    .description('open a local port that reaches a tcp+https route through svc (CONNECT)')
    .argument('<route>', 'the route, tcp+https://host:port')
    .requiredOption('--listen <host:port>', 'local address for TCP clients, e.g. 127.0.0.1:6379')
    .option('--proxy <url>', "where svc listens (default https://<route host>:443)")
    .option('--browser', 'open the sign-in page in a browser (default: print its URL)')
    .option('--auth-origin <url>', "an origin svc's sign-in page may be on besides the proxy's and the route host's (repeatable)", (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--no-login', 'send no credential: for public routes, never sign in')
    .action(async (route: string, opts: { listen: string; proxy?: string; browser?: boolean; authOrigin: string[]; login: boolean }) => {
      const { tcpCommand } = await import('./tcp-command.ts');
      code = await tcpCommand(route, opts, io);
    });
  try {
    await program.parseAsync(normalizeArgs(argv), { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    throw e;
  }
  return code;
}
