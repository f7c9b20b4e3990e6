/**
 * The compiler's public entry point: what `svc run -config` (reload included) and the CLI use. With
 * the plan contract (compiler/plan/), it is all of the compiler that code outside compiler/ may
 * import (test/layout.test.ts holds the rule; docs/architecture.md §6).
 */
export { compile, MAX_DIAGNOSTICS, type CompileResult } from './compile.ts';
export type { CompileInput, ReadResult } from './compile-input.ts';
export type { Diagnostic } from './diagnostics/diagnostic.ts';
/** `file:line:col` of a diagnostic's span, for the JSON form of `svc run`'s startup diagnostics. */
export { formatLocation } from './source/source-file.ts';
export { renderJson } from './diagnostics/render-json.ts';
export { renderText, summaryLine } from './diagnostics/render-text.ts';
export { isSecretPath } from './settings/secret-paths.ts';
/** Policies in the text syntax, for explanations and diffs. */
export { printCriterion, printPolicy, printRule } from './policy/print.ts';
export { criteriaOf } from './policy/ir.ts';
/** Whether one route matches every path another matches, `path_case` included (the shadowing check), for `svc diff`. */
export { routeCovers } from './validate/rules/route-shadowed.ts';
/** Every setting with the plan path it lowers to, so `svc diff` names a plan field by its config key. */
export { SETTINGS } from './settings/table.ts';
export type { SettingKind, SettingSpec } from './settings/types.ts';
/** Properties files of `svc verify` (docs/verify.md): read and checked here, proved by cli/verify/. */
export { readProperties, unreadableProperties, bindProperties, hostPatternMatches, hostName, type Property, type PropertyForm, type Scope, type PropertiesResult } from './verify/properties.ts';
export { toJsonDiagnostic, type JsonDiagnostic } from './diagnostics/render-json.ts';
export { policyRuleLocations } from './verify/rule-locations.ts';
