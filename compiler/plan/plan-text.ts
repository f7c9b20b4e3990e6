/**
 * Whether a file is a plan or a config, told from its text alone (part of the plan contract, so
 * that `svc run plan.json`, a shadow plan and the CLI tell them apart without loading the compiler).
 */

/** Whether file text is a plan (a JSON object with `formatVersion` and `body`) rather than a config. */
export function looksLikePlan(text: string): boolean {
  if (!/^\s*\{/.test(text)) return false;
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && 'formatVersion' in v && 'body' in v;
  } catch {
    return false;
  }
}
