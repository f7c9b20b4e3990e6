import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import * as D from '../diagnostics/codes/schema.ts';
import type { Reporter } from '../diagnostics/diagnostic.ts';
import type { Span } from '../source/source-file.ts';
import { childPath, type Coerced } from './coerce.ts';
import { configSchema } from './config-schema.ts';
import { suggest } from './suggest.ts';

let compiled: ValidateFunction | undefined;

/** The config schema compiled once per process (ajv compilation is the slow part). */
function validator(): ValidateFunction {
  compiled ??= new Ajv({ allErrors: true, strict: true, verbose: true }).compile(configSchema());
  return compiled;
}

function pointerToPath(pointer: string): string {
  let path = '';
  for (const raw of pointer.split('/').slice(1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    path = /^\d+$/.test(seg) ? childPath(path, Number(seg)) : childPath(path, seg);
  }
  return path;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a map';
  if (typeof v === 'string') return `the string \`${v.length > 40 ? `${v.slice(0, 37)}...` : v}\``;
  return `${typeof v} \`${String(v)}\``;
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string', boolean: 'a boolean', integer: 'an integer', number: 'a number', array: 'a list', object: 'a map', null: 'null',
};

function valueAt(data: unknown, pointer: string): unknown {
  let cur = data;
  for (const raw of pointer.split('/').slice(1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    cur = (cur as Record<string, unknown> | undefined)?.[seg];
  }
  return cur;
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v === 'object' ? 'object' : typeof v;
}

/**
 * Schema errors the compiler leaves to lowering, which reports them with their own located code
 * (the schema publishes the same syntax, compiler/ir/values.ts `VALUE_PATTERNS`): a value outside
 * a `pattern` (URL SVC3002, `host:port` SVC3003, base64 SVC3004/SVC3005), anything about a duration
 * (SVC3001), and the type mismatch of one `anyOf` shape (the `anyOf` error speaks for the union).
 * Such a value is not marked unusable: lowering sees it and rejects it.
 */
function leftToLowering(e: ErrorObject): boolean {
  if (e.keyword === 'pattern') return true;
  if (e.schemaPath.startsWith('#/$defs/duration/')) return true;
  return e.keyword === 'type' && /\/anyOf\/\d+\/type$/.test(e.schemaPath);
}

/**
 * Stage 4: checks the coerced data against the config schema and reports every violation, located
 * by the node it came from. Returns the config paths whose values are unusable (wrong type, out of
 * range, missing field); empty when the data matches the schema. Unknown keys are reported but do
 * not make their parent unusable: lowering ignores them.
 */
export function schemaCheck(c: Coerced, r: Reporter): Set<string> {
  const bad = new Set<string>();
  const validate = validator();
  if (validate(c.data)) return bad;
  const errors = (validate.errors ?? []).filter((e) => !leftToLowering(e));
  const seen = new Set<string>();
  for (const e of errors) {
    const path = pointerToPath(e.instancePath);
    if (e.keyword !== 'additionalProperties') bad.add(path);
    const loc = c.index.get(path);
    const at: Span | undefined = loc?.node.span;
    const key = path === '' ? 'the configuration' : path;
    const dedupe = `${e.keyword}|${path}|${JSON.stringify(e.params)}`;
    if (seen.has(dedupe)) continue;
    seen.add(dedupe);
    switch (e.keyword) {
      case 'additionalProperties': {
        const extra = (e.params as { additionalProperty: string }).additionalProperty;
        const kp = childPath(path, extra);
        const parent = (e.parentSchema ?? {}) as { properties?: Record<string, unknown> };
        const props = Object.keys(parent.properties ?? {});
        r.report(D.UnknownKey, c.index.get(kp)?.keySpan ?? c.index.get(kp)?.node.span ?? at,
          { key: extra, where: path === '' ? 'the configuration' : `\`${path}\``, suggestion: suggest(extra, props) }, kp);
        break;
      }
      case 'type': {
        const expected = String((e.params as { type: string | string[] }).type).split(',').map((t) => TYPE_NAMES[t] ?? t).join(' or ');
        r.report(D.WrongType, at, { key, expected, got: describe(valueAt(c.data, e.instancePath)) }, path);
        break;
      }
      case 'enum': {
        // Allowed values may be numbers (a redirect's `response_code`): compared and shown as text.
        const allowed = (e.params as { allowedValues: unknown[] }).allowedValues.map(String);
        const value = String(valueAt(c.data, e.instancePath));
        r.report(D.InvalidEnumValue, at, { key, value, allowed: allowed.map((a) => `\`${a}\``).join(', '), suggestion: suggest(value, allowed) }, path);
        break;
      }
      case 'minimum':
      case 'maximum':
        r.report(D.ValueOutOfRange, at, { key, limit: `${e.keyword === 'minimum' ? 'at least' : 'at most'} ${(e.params as { limit: number }).limit}` }, path);
        break;
      case 'anyOf': {
        // No shape matched. When the value's type fits one of them, that shape's own errors
        // (reported separately) say what is wrong; otherwise the value has the wrong type.
        const shapes = ((e.parentSchema as { anyOf?: { type?: string }[] } | undefined)?.anyOf ?? []).map((x) => x.type ?? '');
        const v = valueAt(c.data, e.instancePath);
        if (shapes.includes(jsonType(v))) break;
        r.report(D.WrongType, at, { key, expected: shapes.map((t) => TYPE_NAMES[t] ?? t).join(' or '), got: describe(v) }, path);
        break;
      }
      case 'required': {
        const field = (e.params as { missingProperty: string }).missingProperty;
        r.report(D.MissingRequiredField, at, { field, where: path === '' ? 'the configuration' : `\`${path}\`` }, path);
        break;
      }
      default:
        r.report(D.SchemaViolation, at, { key, detail: e.message ?? 'is invalid' }, path);
    }
  }
  return bad;
}
