/**
 * A route's `regex` (RE2 syntax, matched against the whole path: runtime/plan/rewrite.ts) as a Z3
 * regular expression, for the subset whose meaning is plain: literals and escaped punctuation, `.`,
 * classes (`[a-z0-9_-]`, `[^/]`, `\d`, `\w`, `\s`), groups (`(…)`, `(?:…)`), `|`, the quantifiers
 * `* + ? {n} {n,} {n,m}` (lazy forms match the same paths), and `^`/`$` at the ends. Anything else
 * (flags, word boundaries, Unicode classes) throws `Unsupported`: the check then treats the matcher
 * as unknown and learns it from the real one (check.ts).
 */
import { SvcError } from '../../../runtime/core/errors.ts';
import type { Re } from 'z3-solver';
import { lit, type Z3 } from './encode.ts';

type R = Re<'main'>;

/** A regex outside the plain subset: the matcher is left to confirmation (check.ts). */
export class Unsupported extends SvcError<'SVC_ERR_DIFF_NOT_ENCODED'> {
  constructor(message: string) {
    super('SVC_ERR_DIFF_NOT_ENCODED', message);
    this.name = 'Unsupported';
  }
}

/** Translates `source` (see the module comment). */
export function regexToZ3(z: Z3, source: string): R {
  let i = 0;
  const anyChar = () => z.Diff(z.Range(lit(z, '\u0000'), lit(z, '\u{2ffff}')), z.Re.toRe(lit(z, '\n')));
  const range = (a: string, b: string) => z.Range(lit(z, a), lit(z, b));
  const chars = (s: string) => z.Re.toRe(lit(z, s));
  const CLASSES: Record<string, () => R> = {
    d: () => range('0', '9'),
    w: () => z.Union(range('0', '9'), range('A', 'Z'), range('a', 'z'), chars('_')),
    s: () => z.Union(chars('\t'), chars('\n'), chars('\f'), chars('\r'), chars(' ')),
  };
  const fail = (why: string): never => {
    throw new Unsupported(`${why} at ${i} in ${JSON.stringify(source)}`);
  };

  const alternation = (): R => {
    const options = [sequence()];
    while (source[i] === '|') {
      i++;
      options.push(sequence());
    }
    return options.length === 1 ? options[0]! : z.Union(...options);
  };

  const sequence = (): R => {
    const parts: R[] = [];
    while (i < source.length && source[i] !== '|' && source[i] !== ')') {
      if (source[i] === '^') {
        if (i !== 0) fail('a ^ inside');
        i++;
        continue;
      }
      if (source[i] === '$') {
        if (i !== source.length - 1) fail('a $ inside');
        i++;
        continue;
      }
      parts.push(quantified(atom()));
    }
    return parts.length === 0 ? chars('') : parts.length === 1 ? parts[0]! : z.ReConcat(...parts);
  };

  const quantified = (a: R): R => {
    let r = a;
    for (;;) {
      const c = source[i];
      if (c === '*') r = z.Star(r);
      else if (c === '+') r = z.Plus(r);
      else if (c === '?') r = z.Option(r);
      else if (c === '{') {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(i));
        if (!m) fail('a { that is not a repetition');
        const lo = Number(m![1]);
        const hi = m![2] === undefined ? lo : m![3] === '' ? undefined : Number(m![3]);
        r = hi === undefined ? z.ReConcat(z.Loop(r, lo, lo), z.Star(r)) : z.Loop(r, lo, hi);
        i += m![0].length - 1;
      } else return r;
      i++;
      if (source[i] === '?') i++; // lazy: the same language
      if (source[i] === '*' || source[i] === '+') fail('a repeated quantifier');
    }
  };

  const escape = (inClass: boolean): R => {
    const c = source[i + 1];
    if (c === undefined) return fail('a trailing \\');
    i += 2;
    if (Object.hasOwn(CLASSES, c)) return CLASSES[c]!();
    if (/[A-Za-z0-9]/.test(c)) {
      if (c === 'n') return chars('\n');
      if (c === 't') return chars('\t');
      return fail(`\\${c}`);
    }
    void inClass;
    return chars(c);
  };

  const atom = (): R => {
    const c = source[i]!;
    if (c === '(') {
      i++;
      if (source.startsWith('?:', i)) i += 2;
      else if (source[i] === '?') fail('a flag or named group');
      const r = alternation();
      if (source[i] !== ')') fail('an unclosed group');
      i++;
      return r;
    }
    if (c === '[') return charClass();
    if (c === '.') {
      i++;
      return anyChar();
    }
    if (c === '\\') return escape(false);
    if ('*+?{'.includes(c)) fail('a quantifier with nothing before it');
    i++;
    const code = c.codePointAt(0)!;
    if (code > 0xffff) fail('a character beyond the BMP');
    return chars(c);
  };

  const charClass = (): R => {
    i++;
    const negate = source[i] === '^';
    if (negate) i++;
    const items: R[] = [];
    let first = true;
    while (i < source.length && (source[i] !== ']' || first)) {
      first = false;
      let lo: string;
      if (source[i] === '\\') {
        const c = source[i + 1];
        if (c !== undefined && Object.hasOwn(CLASSES, c)) {
          items.push(escape(true));
          continue;
        }
        if (c === undefined || /[A-Za-z0-9]/.test(c)) fail('an escape in a class');
        lo = c!;
        i += 2;
      } else if (source[i] === '[') {
        return fail('a nested class or [:name:]');
      } else {
        lo = source[i]!;
        i++;
      }
      if (source[i] === '-' && source[i + 1] !== ']' && i + 1 < source.length) {
        let hi = source[i + 1]!;
        if (hi === '\\') {
          const c = source[i + 2];
          if (c === undefined || /[A-Za-z0-9]/.test(c)) fail('an escape in a range');
          hi = c!;
          i += 3;
        } else i += 2;
        items.push(range(lo, hi));
      } else items.push(chars(lo));
    }
    if (source[i] !== ']') fail('an unclosed class');
    i++;
    const set = items.length === 1 ? items[0]! : z.Union(...items);
    return negate ? z.Diff(z.Range(lit(z, '\u0000'), lit(z, '\u{2ffff}')), set) : set;
  };

  const r = alternation();
  if (i !== source.length) fail('an unmatched )');
  return r;
}
