import { diag } from '../define.ts';

export const PlanInconsistent = diag<{ detail: string }>(
  'SVC5001', 'plan-inconsistent', 'error',
  'The emitted plan failed its consistency check (a cross-reference does not hold). This is a compiler bug; the plan is not written.',
  (a) => `the plan is inconsistent: ${a.detail}`,
  'this is a bug in svc; please report it with the configuration',
);

export const ConfigReadFailed = diag<{ file: string; reason: string }>(
  'SVC5002', 'config-unreadable', 'error',
  'The config file named on the command line cannot be read.',
  (a) => `cannot read config file \`${a.file}\`: ${a.reason}`,
  'check the path given with `-config`',
);

export const NoRoutes = diag(
  'SVC5003', 'no-routes', 'warning',
  'The configuration has no routes: svc starts but neither authorizes nor proxies traffic until one exists.',
  () => 'the configuration has no routes',
  'add routes under `routes`',
);

export const TooManyDiagnostics = diag<{ shown: number; total: number }>(
  'SVC5004', 'too-many-diagnostics', 'warning',
  'More diagnostics than are shown; the list is capped, errors kept before warnings. Its severity is warning: whether the compile failed is decided by the errors, of which at least one is shown whenever there is one.',
  (a) => `${a.total - a.shown} more diagnostics not shown (${a.total} in all)`,
  'fix the ones shown and compile again',
);
