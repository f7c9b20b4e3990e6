import { diag } from '../define.ts';

export const InternalCompilerError = diag<{ detail: string }>(
  'SVC9001', 'internal-compiler-error', 'error',
  'The compiler hit a bug. The config may be fine; please report it with the input.',
  (a) => `internal compiler error: ${a.detail}`,
  'this is a bug in svc, not in your configuration; please report it with the input that triggered it',
);
